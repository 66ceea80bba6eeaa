from drarena.models.testing import model_server  # noqa: F401  (session fixture)
