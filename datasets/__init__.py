"""The CLUTO document-term matrices of the paper and the supplement's synthetic biclusters."""
