"""What every part of tfdesk shares and which depends on nothing else of tfdesk: the words
(targets, job states, icons) and the state database's opening. Every package may import it;
it imports none of them."""
