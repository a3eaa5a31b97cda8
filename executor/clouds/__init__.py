"""The clouds a job can run on, one folder each, behind one seam (:mod:`executor.clouds.base`)."""
