"""Ready-made tasks on top of the trainer, usable from CPython and (through onnxtrain.web) from the page:

- ``tabular``: a CSV file -> an MLP whose export takes the raw columns (preprocessing inside the graph), with
  ``csv_table`` (the columns, the label, the task) and ``tabular_prep`` (the preprocessing, fitted and exported);
- ``images``: RGB(A) images with a class each -> a small CNN whose export normalises its input;
- ``handwriting``: a pretrained digit classifier personalised with the user's 8x8 drawings and new classes;
- ``personalize``: a pretrained image backbone (``backbone``, ``preprocess``) taught the user's classes from photos;
- ``audio``: a pretrained speech backbone (``audio_frontend``: its log-mel front end in numpy and ONNX) taught the
  user's sounds from clips or WAV files (``audio_input``), with a background-noise class; ``audio_folder`` reads
  the CLI's folder of class folders;
- ``head``: the export head they share (preprocessing in front, probabilities and label behind).

Inputs are bytes, numpy arrays and plain Python values; errors the user can fix are DataError.
"""
from ..train.data import DataError

__all__ = ["DataError"]
