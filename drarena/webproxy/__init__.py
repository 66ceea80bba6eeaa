"""The frozen internet for unmodified agents: an HTTP(S) forward proxy answering from a snapshot."""
