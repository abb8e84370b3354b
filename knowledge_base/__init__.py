"""The TensorFlow knowledge base: wheels read statically, stored in SQLite, searched."""
