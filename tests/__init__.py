"""tfdesk's tests, grouped by the package they test; shared helpers live here."""
