"""Face inputs: detectors (registry), subject tracking (ByteTrack), landmarks and
eye aspect ratio, crop rules and data normalization (Zhang et al. 2018)."""
