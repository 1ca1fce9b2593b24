"""Taking part in a Flower federation: parameter vectors in onnxruntime-training's contiguous order cross the wire,
each client trains locally with onnxtrain (CPython or a page) or onnxruntime-training, and Flower aggregates.

The modules that import flwr (strategies, server_app, client_app) are reached only from the Flower apps and the
cli's ``federate`` and ``join`` commands; the wheel's core never imports them."""
