#!/usr/bin/python3
"""Writes small loom 3.0 files (as loompy writes them) into FOLDER: the seeds of the
fuzz_loom target (scripts/fuzz). Each shows a different part of the layout to the
fuzzer: a gzip-chunked /matrix, an uncompressed contiguous one, extra /layers, string,
integer, float and 2-D column attributes, fixed-length ASCII names with XML character
references. Small on purpose (a few KiB each): the fuzzer mutates faster.

    /usr/bin/python3 tests/fuzz/make_loom_seeds.py FOLDER
"""
import os
import sys

import h5py
import numpy as np


def write(path, genes, cells, seed, chunks=(16, 16), compression="gzip", layers=(), velocyto=False):
    rng = np.random.default_rng(seed)
    matrix = (rng.poisson(0.5, size=(genes, cells)) * (rng.random((genes, cells)) < 0.4)).astype(np.float32)
    names = ["Gene%d" % g for g in range(genes)]
    names[1] = "Caf\u00e9"
    with h5py.File(path, "w") as f:
        f.attrs["LOOM_SPEC_VERSION"] = "3.0.0"
        if chunks:
            f.create_dataset("matrix", data=matrix, chunks=chunks, compression=compression)
        else:
            f.create_dataset("matrix", data=matrix)
        f.create_group("layers")
        for name in layers:
            f["layers"].create_dataset(name, data=matrix * 2 + 1, chunks=chunks or None)
        rows, cols = f.create_group("row_attrs"), f.create_group("col_attrs")
        rows["Gene"] = np.array([n.encode("ascii", "xmlcharrefreplace") for n in names])
        rows["Accession"] = np.array([("ENSG%05d" % g).encode() for g in range(genes)])
        cols["CellID"] = np.array([("cell%d" % c).encode() for c in range(cells)])
        cols["cluster"] = np.arange(cells, dtype=np.int64) % 3
        cols["n_counts"] = matrix.sum(axis=0).astype(np.float64)
        cols["X_umap"] = rng.random((cells, 2)).astype(np.float32)
        if velocyto:
            cols["ClusterName"] = np.array([("c%d" % (c % 3)).encode() for c in range(cells)])
        f.create_group("row_graphs")
        f.create_group("col_graphs")


def main():
    folder = sys.argv[1]
    os.makedirs(folder, exist_ok=True)
    write(os.path.join(folder, "seed-plain.loom"), 24, 18, 1)
    write(os.path.join(folder, "seed-contiguous.loom"), 20, 12, 2, chunks=None)
    write(os.path.join(folder, "seed-uncompressed.loom"), 20, 16, 3, compression=None)
    write(os.path.join(folder, "seed-velocyto.loom"), 16, 10, 4, chunks=(8, 8), layers=("spliced", "unspliced"),
          velocyto=True)


if __name__ == "__main__":
    main()
