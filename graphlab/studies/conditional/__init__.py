"""The conditional-node studies: early exit, a decode loop in one launch, one graph for many batch sizes.
Each is measured live on a GPU and recorded with provenance (`graphlab record --models conditional`).
"""
