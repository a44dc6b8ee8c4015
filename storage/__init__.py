"""Dataset layout, manifests, fingerprints, atomic publish and file formats (DESIGN §3).

Only the standard library, pyarrow and numpy are imported here, so every other layer can depend on it.
"""
