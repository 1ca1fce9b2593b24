"""The ORT format's error."""


class OrtFormatError(ValueError):
    """A model that the ORT format cannot hold, or a file that is not one."""
