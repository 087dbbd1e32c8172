"""Device drivers behind one seam (``base.py``): each device has real and simulated
backends (and replay for sensors) selected by one parameter, ``backend``."""
