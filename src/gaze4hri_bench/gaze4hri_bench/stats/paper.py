"""The study's published values, for the report to print beside ours.

Restated from Sezer, Küçük, Şahin, Kalkan, "Gaze4HRI: Zero-shot Benchmarking Gaze
Estimation Neural-Networks for Human-Robot Interaction" (arXiv 2605.04770): Table III
(experiment 1), Table S9 (crop vs rectified), Table S10 (efficiency, RTX A4000, 1000
runs) and Table S11 (mean ground-truth gaze per target point). Keys are this project's
method names (``specs.SPECS``); numbers are the paper's, unchanged. Every table built
from them is labelled with :data:`SOURCE` and the table number, so that they are never
read as our measurement.
"""
from __future__ import annotations

from types import MappingProxyType

__all__ = ["SOURCE", "label", "TABLE_III", "TABLE_S9", "TABLE_S10", "TABLE_S11", "S10_FAMILY"]

SOURCE = "Sezer et al."


def label(table: str) -> str:
    """The label of a published column or row, e.g. ``paper (Sezer et al., Table III)``."""
    return f"paper ({SOURCE}, Table {table})"


#: Table III: method -> ((mean, SD) at illumination 10, 25, 50, 100 %, CV %); subject-level, deg.
TABLE_III = MappingProxyType({
    "puregaze_eth": (((11.73, 5.39), (11.52, 4.95), (12.18, 9.82), (10.19, 9.42)), 7.50),
    "gazetr_eth": (((11.50, 3.66), (11.16, 3.37), (12.45, 7.53), (11.50, 7.52)), 4.77),
    "puregaze_gaze360": (((16.92, 5.76), (14.68, 6.23), (15.13, 6.11), (17.82, 5.99)), 9.18),
    "gazetr_gaze360": (((14.73, 3.95), (13.81, 5.16), (15.27, 5.95), (17.17, 6.32)), 9.30),
    "l2cs_gaze360": (((19.61, 8.39), (17.60, 4.69), (18.95, 4.56), (18.99, 3.89)), 4.51),
    "mcgaze_gaze360": (((19.08, 6.84), (14.33, 5.93), (13.24, 6.26), (14.29, 5.69)), 17.15),
    "gat_gaze360": (((17.93, 6.01), (16.74, 6.44), (15.82, 6.42), (16.35, 5.89)), 5.36),
})
#: Illumination levels (%) of Table III's columns.
TABLE_III_LEVELS = (10, 25, 50, 100)

#: Table S9: method -> (crop, rectified) whole-dataset mean error (deg).
TABLE_S9 = MappingProxyType({
    "puregaze_eth": (15.41, 9.42), "gazetr_eth": (21.80, 11.46), "puregaze_gaze360": (15.53, 14.42),
    "gazetr_gaze360": (19.17, 13.73), "l2cs_gaze360": (17.58, 17.08), "mcgaze_gaze360": (17.71, 57.98),
    "gat_gaze360": (15.69, 24.51),
})

#: Table S10 (RTX A4000): network family -> (peak VRAM MB, ms/frame, FPS).
TABLE_S10 = MappingProxyType({
    "puregaze": (142.25, 1.93, 518.0), "gazetr": (65.81, 1.84, 543.0), "l2cs": (111.94, 1.92, 521.0),
    "mcgaze": (1136.49, 51.09, 19.6), "gat": (271.11, 14.80, 67.6),
})
#: This project's method name -> Table S10 family (the row that times the same network).
S10_FAMILY = MappingProxyType({
    "puregaze_eth": "puregaze", "puregaze_gaze360": "puregaze", "gazetr_eth": "gazetr", "gazetr_gaze360": "gazetr",
    "l2cs_gaze360": "l2cs", "mcgaze_gaze360": "mcgaze", "gat_gaze360": "gat",
})

#: Table S11: target point -> mean ground-truth gaze (pitch, yaw) in degrees across subjects.
TABLE_S11 = MappingProxyType({
    "P1": (-24.90, -32.35), "P2": (-29.48, 0.01), "P3": (-26.11, 32.24),
    "P4": (-31.82, -42.05), "P5": (-40.69, 0.81), "P6": (-32.61, 42.99),
    "P7": (-40.25, -58.69), "P8": (-60.29, 4.26), "P9": (-39.33, 59.39),
})
