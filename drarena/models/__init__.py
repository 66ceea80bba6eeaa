"""The model layer: litellm client with roles, retries, record/replay cache; vLLM serving."""
