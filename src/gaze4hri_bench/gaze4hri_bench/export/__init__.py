"""Export sessions to other layouts: ``study`` (the study's released per-trial layout,
export.study) and ``ethxgaze-h5`` (ETH-XGaze HDF5 training sets, export.ethxgaze);
``gaze4hri-bench export`` (export.cli)."""
