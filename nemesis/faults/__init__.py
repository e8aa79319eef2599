"""The fault kinds of :mod:`contract.faults`, one small class each (:mod:`.base` says what a
fault is); :mod:`.factory` builds one from its kind name, a target spec and parameters."""
