"""compilebench: what torch.compile does for Hugging Face vision models, with honest numbers."""

__version__ = "0.1.0"
