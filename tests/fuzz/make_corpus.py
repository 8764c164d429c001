#!/usr/bin/python3
"""Writes Fathom's malformed-file corpus into a folder (run with Debian's /usr/bin/python3:
h5py and numpy).

    make_corpus.py OUT [--sample N]

Every case is a small file (or folder) made from a valid seed with one thing broken:
structured edits of h5ad, 10x HDF5 (v2, v3) and Matrix Market files (indptr, indices,
data, shapes, dtypes, encodings, links, storage layouts, filters, string heaps, names,
text formats, gzip), truncations and zeroed blocks, plus seeded byte flips of the small
seeds, and a few valid variants that must be read correctly. OUT/manifest.json lists
each case:

    name    file or folder, relative to OUT
    expect  "reject": info and convert exit 3 naming the file;
            "accept": both exit 0, the shape and the converted X match expected;
            "run-reject": a valid file with nothing to analyse (info and convert
                exit 0, run exits 3);
            "any": a blind mutation: exit 0 or 3, nothing else
    why     what is broken
    expected  for "accept": "<name>.npy" holding the dense cells x genes matrix

--sample N writes every "accept" case and an even spread of the others, N in all
(the quick set CI runs by default); without it, the whole set.
"""
import gzip
import json
import os
import random
import shutil
import struct
import sys

import h5py
import numpy as np

CELLS, GENES = 12, 8


# ----------------------------------------------------------------------------- seeds

def base_matrix(seed=7, cells=CELLS, genes=GENES, density=0.45):
    rng = np.random.default_rng(seed)
    dense = rng.integers(1, 30, size=(cells, genes)).astype(np.float32)
    dense[rng.random((cells, genes)) > density] = 0
    for row in range(cells):  # every cell and gene expressed once at least
        dense[row, row % genes] = max(dense[row, row % genes], 1)
    return dense


def csr(dense):
    indptr, indices, data = [0], [], []
    for row in dense:
        nz = np.nonzero(row)[0]
        indices.extend(nz.tolist())
        data.extend(row[nz].tolist())
        indptr.append(len(indices))
    return (np.array(indptr, np.int64), np.array(indices, np.int32), np.array(data, np.float32))


def str_ds(group, name, values, dtype=None, **kwargs):
    dtype = dtype or h5py.string_dtype("utf-8")
    return group.create_dataset(name, data=np.array(values, dtype=object), dtype=dtype, **kwargs)


def write_dataframe(group, names, columns=None):
    group.attrs["encoding-type"] = "dataframe"
    group.attrs["encoding-version"] = "0.2.0"
    group.attrs["_index"] = "_index"
    columns = columns or {}
    group.attrs["column-order"] = np.array(list(columns), dtype=object) if columns else np.array([], dtype="f8")
    str_ds(group, "_index", names)
    for name, values in columns.items():
        group.create_dataset(name, data=values)


def write_h5ad(path, dense=None, layout="csr", x_kwargs=None, obs_names=None, var_names=None, uns=True):
    dense = base_matrix() if dense is None else dense
    cells, genes = dense.shape
    x_kwargs = x_kwargs or {}
    with h5py.File(path, "w") as f:
        f.attrs["encoding-type"] = "anndata"
        f.attrs["encoding-version"] = "0.1.0"
        if layout == "dense":
            x = f.create_dataset("X", data=dense, **x_kwargs)
            x.attrs["encoding-type"] = "array"
            x.attrs["encoding-version"] = "0.2.0"
        else:
            source = dense if layout == "csr" else dense.T
            indptr, indices, data = csr(source)
            x = f.create_group("X")
            x.attrs["encoding-type"] = layout + "_matrix"
            x.attrs["encoding-version"] = "0.1.0"
            x.attrs["shape"] = np.array([cells, genes], np.int64)
            x.create_dataset("indptr", data=indptr, **x_kwargs)
            x.create_dataset("indices", data=indices, **x_kwargs)
            x.create_dataset("data", data=data, **x_kwargs)
        write_dataframe(f.create_group("obs"), obs_names or [f"cell{i}" for i in range(cells)])
        write_dataframe(f.create_group("var"), var_names or [f"gene{i}" for i in range(genes)])
        for name in ("obsm", "varm", "obsp", "varp", "layers"):
            g = f.create_group(name)
            g.attrs["encoding-type"] = "dict"
            g.attrs["encoding-version"] = "0.1.0"
        if uns:
            g = f.create_group("uns")
            g.attrs["encoding-type"] = "dict"
            g.attrs["encoding-version"] = "0.1.0"
    return dense


def write_10x(path, dense=None, version=3):
    dense = base_matrix() if dense is None else dense
    cells, genes = dense.shape
    indptr, indices, data = csr(dense)  # per barcode: indices are features
    with h5py.File(path, "w") as f:
        g = f.create_group("matrix" if version == 3 else "GRCh38")
        g.create_dataset("shape", data=np.array([genes, cells], np.int32))
        g.create_dataset("indptr", data=indptr)
        g.create_dataset("indices", data=indices.astype(np.int64))
        g.create_dataset("data", data=data.astype(np.int32))
        g.create_dataset("barcodes", data=np.array([f"AAAC{i:04d}-1".encode() for i in range(cells)]))
        ids = np.array([f"ENSG{i:05d}".encode() for i in range(genes)])
        names = np.array([f"gene{i}".encode() for i in range(genes)])
        if version == 3:
            feat = g.create_group("features")
            feat.create_dataset("id", data=ids)
            feat.create_dataset("name", data=names)
            feat.create_dataset("feature_type", data=np.array([b"Gene Expression"] * genes))
            feat.create_dataset("genome", data=np.array([b"GRCh38"] * genes))
        else:
            g.create_dataset("genes", data=ids)
            g.create_dataset("gene_names", data=names)
    return dense


def mtx_text(dense, field="integer", comment="", size=None, entries=None, transpose=True):
    """10x orientation: rows are genes, columns are cells."""
    m = dense.T if transpose else dense
    lines = [f"%%MatrixMarket matrix coordinate {field} general"]
    if comment:
        lines.append(comment)
    nz = [(r + 1, c + 1, m[r, c]) for c in range(m.shape[1]) for r in range(m.shape[0]) if m[r, c] != 0]
    rows, cols = m.shape
    lines.append(size if size is not None else f"{rows} {cols} {len(nz)}")
    for r, c, v in (entries if entries is not None else nz):
        lines.append(f"{r} {c}" if field == "pattern" else f"{r} {c} {int(v) if field == 'integer' else v}")
    return "\n".join(lines) + "\n"


def write_mtx_folder(folder, dense, gz=True, barcodes=None, features=None, matrix=None):
    os.makedirs(folder, exist_ok=True)
    cells, genes = dense.shape
    suffix = ".gz" if gz else ""
    opener = (lambda p: gzip.open(p, "wt")) if gz else (lambda p: open(p, "w"))
    with opener(os.path.join(folder, "matrix.mtx" + suffix)) as f:
        f.write(matrix if matrix is not None else mtx_text(dense))
    with opener(os.path.join(folder, "barcodes.tsv" + suffix)) as f:
        f.write(barcodes if barcodes is not None else "".join(f"AAAC{i:04d}-1\n" for i in range(cells)))
    with opener(os.path.join(folder, "features.tsv" + suffix)) as f:
        f.write(features if features is not None
                else "".join(f"ENSG{i:05d}\tgene{i}\tGene Expression\n" for i in range(genes)))


# ------------------------------------------------------------------------ the corpus

class Corpus:
    def __init__(self, out):
        self.out = out
        self.cases = []

    def path(self, name):
        return os.path.join(self.out, name)

    def add(self, name, expect, why, dense=None):
        case = {"name": name, "expect": expect, "why": why}
        if dense is not None:
            np.save(self.path(name + ".npy"), dense.astype(np.float32))
            case["expected"] = name + ".npy"
        self.cases.append(case)


def edit_h5ad(corpus, name, why, edit, expect="reject", **kwargs):
    path = corpus.path(name + ".h5ad")
    dense = write_h5ad(path, **kwargs)
    with h5py.File(path, "r+") as f:
        edit(f)
    corpus.add(name + ".h5ad", expect, why, dense if expect in ("accept", "run-reject") else None)


def replace(group, name, data, **kwargs):
    del group[name]
    return group.create_dataset(name, data=data, **kwargs)


def h5ad_cases(c):
    dense = base_matrix()
    indptr, indices, data = csr(dense)
    nnz = len(indices)
    # valid variants
    for layout in ("csr", "csc", "dense"):
        edit_h5ad(c, f"valid-{layout}", f"valid {layout} X", lambda f: None, "accept", layout=layout)
    edit_h5ad(c, "valid-gzip", "valid gzip+shuffle X", lambda f: None, "accept",
              x_kwargs={"compression": "gzip", "shuffle": True, "chunks": True})
    edit_h5ad(c, "valid-lzf", "valid lzf X", lambda f: None, "accept", x_kwargs={"compression": "lzf", "chunks": True})
    edit_h5ad(c, "valid-fixed-names", "fixed-length names",
              lambda f: (replace(f["var"], "_index", np.array([f"gene{i}".encode() for i in range(GENES)]))), "accept")

    def deep_uns(depth):
        def edit(f):
            g = f["uns"]
            for level in range(depth):
                g = g.create_group(f"l{level}")
            g.create_dataset("leaf", data=np.arange(3))
        return edit
    edit_h5ad(c, "valid-uns-depth20", "uns nested 20 deep", deep_uns(20), "accept")
    edit_h5ad(c, "uns-depth400", "uns nested 400 deep (beyond the supported depth)", deep_uns(400))

    # indptr
    bad_indptr = {
        "short": indptr[:-1], "long": np.append(indptr, nnz), "start1": np.concatenate([[1], indptr[1:]]),
        "end-past": np.concatenate([indptr[:-1], [nnz + 5]]), "end-short": np.concatenate([indptr[:-1], [nnz - 1]]),
        "negative": np.concatenate([[0, -3], indptr[2:]]), "float": indptr.astype(np.float64) + 0.5,
        "2d": indptr.reshape(1, -1), "huge": np.concatenate([indptr[:-1], [2**62]]), "empty": np.array([], np.int64),
        "string": np.array([str(v).encode() for v in indptr]),
    }
    for position in range(1, CELLS):
        p = indptr.copy()
        p[position] = p[position + 1] + 1
        bad_indptr[f"decrease{position}"] = p
    for key, value in bad_indptr.items():
        edit_h5ad(c, f"indptr-{key}", f"X/indptr {key}", lambda f, v=value: replace(f["X"], "indptr", v))
    edit_h5ad(c, "indptr-missing", "no X/indptr", lambda f: f["X"].__delitem__("indptr"))
    # indices
    for value in (-1, GENES, GENES + 100, 2**31 - 1):
        for entry in (0, nnz // 2, nnz - 1):
            def edit(f, value=value, entry=entry):
                i = indices.astype(np.int64)
                i[entry] = value
                replace(f["X"], "indices", i)
            edit_h5ad(c, f"indices-{value}-at{entry}", f"X/indices[{entry}] = {value}", edit)
    row = next(r for r in range(CELLS) if indptr[r + 1] - indptr[r] >= 2)
    def duplicate(f):
        i = indices.copy()
        i[indptr[row] + 1] = i[indptr[row]]
        replace(f["X"], "indices", i)
    edit_h5ad(c, "indices-duplicate", "a gene twice in one row", duplicate)
    for key, value in {"float": indices.astype(np.float32), "short": indices[:-1], "long": np.append(indices, 0),
                       "2d": indices.reshape(1, -1), "string": np.array([b"x"] * nnz)}.items():
        edit_h5ad(c, f"indices-{key}", f"X/indices {key}", lambda f, v=value: replace(f["X"], "indices", v))
    edit_h5ad(c, "indices-missing", "no X/indices", lambda f: f["X"].__delitem__("indices"))
    # data
    for key, special in {"nan": np.nan, "inf": np.inf, "neginf": -np.inf}.items():
        for entry in (0, nnz - 1):
            def edit(f, special=special, entry=entry):
                d = data.copy()
                d[entry] = special
                replace(f["X"], "data", d)
            edit_h5ad(c, f"data-{key}-at{entry}", f"X/data[{entry}] = {key}", edit)
    for key, value in {"short": data[:-1], "long": np.append(data, 1), "string": np.array([b"1"] * nnz),
                       "2d": data.reshape(1, -1), "f64-overflow": np.full(nnz, 1e300),
                       "compound": np.zeros(nnz, dtype=[("a", "f4"), ("b", "i4")])}.items():
        edit_h5ad(c, f"data-{key}", f"X/data {key}", lambda f, v=value: replace(f["X"], "data", v))
    edit_h5ad(c, "data-missing", "no X/data", lambda f: f["X"].__delitem__("data"))
    # shape and encoding
    for key, value in {"missing": None, "one": [CELLS], "three": [CELLS, GENES, 1], "negative": [-1, GENES],
                       "cells+1": [CELLS + 1, GENES], "genes-1": [CELLS, GENES - 1], "zero-genes": [CELLS, 0],
                       "zero-cells": [0, GENES], "huge": [10**12, GENES], "huge-genes": [CELLS, 2**33],
                       "float": [12.5, 8.0], "string": ["12", "8"]}.items():
        def edit(f, value=value):
            if value is None:
                del f["X"].attrs["shape"]
            elif isinstance(value[0], str):
                f["X"].attrs["shape"] = np.array([v.encode() for v in value])
            else:
                f["X"].attrs["shape"] = np.array(value)
        edit_h5ad(c, f"shape-{key}", f"X shape attribute {key}", edit)
    for key, value in {"unknown": "coo_matrix", "empty": "", "dataframe": "dataframe", "csc": "csc_matrix"}.items():
        edit_h5ad(c, f"encoding-{key}", f"X encoding-type {value!r}",
                  lambda f, v=value: f["X"].attrs.__setitem__("encoding-type", v))
    edit_h5ad(c, "encoding-none", "X without encoding-type", lambda f: f["X"].attrs.__delitem__("encoding-type"))
    edit_h5ad(c, "x-dataset-1d", "X a 1-D dataset", lambda f: (f.__delitem__("X"), f.create_dataset("X", data=data)))
    edit_h5ad(c, "x-dataset-3d", "X a 3-D dataset",
              lambda f: (f.__delitem__("X"), f.create_dataset("X", data=np.zeros((CELLS, GENES, 2), np.float32))))
    edit_h5ad(c, "x-strings", "X a string dataset",
              lambda f: (f.__delitem__("X"), f.create_dataset("X", data=np.array([[b"a"] * GENES] * CELLS))))
    for key, special in {"nan": np.nan, "inf": np.inf}.items():
        def edit(f, special=special):
            d = dense.copy()
            d[3, 2] = special
            del f["X"]
            f.create_dataset("X", data=d)
        edit_h5ad(c, f"dense-{key}", f"dense X holding {key}", edit)
    edit_h5ad(c, "dense-wrong-rows", "dense X with a row too many",
              lambda f: (f.__delitem__("X"), f.create_dataset("X", data=np.ones((CELLS + 1, GENES), np.float32))))
    # obs / var
    def df_edit(frame, fn):
        return lambda f: fn(f[frame])
    for frame, count in (("obs", CELLS), ("var", GENES)):
        edit_h5ad(c, f"{frame}-index-short", f"{frame} index one short",
                  df_edit(frame, lambda g, n=count: (g.__delitem__("_index"), str_ds(g, "_index", [f"n{i}" for i in range(n - 1)]))))
        edit_h5ad(c, f"{frame}-index-missing", f"{frame} without its index dataset", df_edit(frame, lambda g: g.__delitem__("_index")))
        edit_h5ad(c, f"{frame}-index-attr-wrong", f"{frame} _index names a missing dataset",
                  df_edit(frame, lambda g: g.attrs.__setitem__("_index", "nowhere")))
        edit_h5ad(c, f"{frame}-index-2d", f"{frame} index 2-D",
                  df_edit(frame, lambda g, n=count: (g.__delitem__("_index"), g.create_dataset("_index", data=np.zeros((n, 2))))))
        edit_h5ad(c, f"{frame}-column-order-missing", f"{frame} column-order lists a missing column",
                  df_edit(frame, lambda g: g.attrs.__setitem__("column-order", np.array(["ghost"], dtype=object))))
        edit_h5ad(c, f"{frame}-column-short", f"{frame} column one row short",
                  df_edit(frame, lambda g, n=count: (g.create_dataset("col", data=np.arange(n - 1)),
                                                     g.attrs.__setitem__("column-order", np.array(["col"], dtype=object)))))
        def categorical(g, n=count, codes_fn=None, cats=None):
            cg = g.create_group("cat")
            cg.attrs["encoding-type"] = "categorical"
            cg.attrs["encoding-version"] = "0.2.0"
            cg.attrs["ordered"] = False
            codes = np.zeros(n, np.int8) if codes_fn is None else codes_fn(n)
            cg.create_dataset("codes", data=codes)
            str_ds(cg, "categories", cats or ["a", "b"])
            g.attrs["column-order"] = np.array(["cat"], dtype=object)
        for key, codes_fn in {"code-high": lambda n: np.full(n, 5, np.int8), "code-neg": lambda n: np.full(n, -2, np.int8),
                              "codes-short": lambda n: np.zeros(n - 1, np.int8),
                              "codes-float": lambda n: np.zeros(n, np.float32)}.items():
            edit_h5ad(c, f"{frame}-cat-{key}", f"{frame} categorical {key}",
                      df_edit(frame, lambda g, fn=codes_fn: categorical(g, codes_fn=fn)))
        edit_h5ad(c, f"{frame}-cat-no-categories", f"{frame} categorical without categories",
                  df_edit(frame, lambda g: (categorical(g), g["cat"].__delitem__("categories"))))
        edit_h5ad(c, f"{frame}-column-encoding", f"{frame} column with an unknown encoding",
                  df_edit(frame, lambda g: (g.create_group("weird").attrs.__setitem__("encoding-type", "mystery"),
                                            g.attrs.__setitem__("column-order", np.array(["weird"], dtype=object)))))
        # names that are not UTF-8
        for key, bad in {"ff": b"\xff\xfe", "lone-cont": b"ab\x80", "overlong": b"\xc0\xaf", "surrogate": b"\xed\xa0\x80",
                         "truncated": b"gene\xe2\x82"}.items():
            def edit(f, frame=frame, n=count, bad=bad):
                g = f[frame]
                names = [f"n{i}".encode() for i in range(n)]
                names[1] = bad
                del g["_index"]
                g.create_dataset("_index", data=np.array(names, dtype=object), dtype=h5py.string_dtype("utf-8"))
            edit_h5ad(c, f"{frame}-utf8-{key}", f"{frame} name {bad!r} not UTF-8", edit)
        edit_h5ad(c, f"{frame}-utf8-category", f"{frame} category not UTF-8",
                  df_edit(frame, lambda g: (categorical(g), g["cat"].__delitem__("categories"),
                                            g["cat"].create_dataset("categories", data=np.array([b"ok", b"\xff"], dtype=object),
                                                                    dtype=h5py.string_dtype("utf-8")))))
        edit_h5ad(c, f"{frame}-utf8-fixed", f"{frame} fixed-length name not UTF-8",
                  df_edit(frame, lambda g, n=count: (g.__delitem__("_index"),
                                                     g.create_dataset("_index", data=np.array([b"\xfe\xff"] + [f"n{i}".encode() for i in range(1, n)])))))
    edit_h5ad(c, "uns-utf8", "uns string not UTF-8",
              lambda f: f["uns"].create_dataset("title", data=b"\xff\xfe", dtype=h5py.string_dtype("utf-8")))
    # links
    edit_h5ad(c, "link-x-dangling", "X a soft link to nothing", lambda f: (f.__delitem__("X"), f.__setitem__("X", h5py.SoftLink("/nowhere"))))
    edit_h5ad(c, "link-x-external", "X an external link to a missing file",
              lambda f: (f.__delitem__("X"), f.__setitem__("X", h5py.ExternalLink("missing-file.h5", "/X"))))
    edit_h5ad(c, "link-obs-dangling", "obs a soft link to nothing", lambda f: (f.__delitem__("obs"), f.__setitem__("obs", h5py.SoftLink("/gone"))))
    edit_h5ad(c, "link-var-external", "var an external link to a missing file",
              lambda f: (f.__delitem__("var"), f.__setitem__("var", h5py.ExternalLink("missing-file.h5", "/var"))))
    edit_h5ad(c, "link-obs-cycle", "obs and obs2 soft links to each other",
              lambda f: (f.__delitem__("obs"), f.__setitem__("obs", h5py.SoftLink("/obs2")), f.__setitem__("obs2", h5py.SoftLink("/obs"))))
    edit_h5ad(c, "link-indptr-dangling", "X/indptr a soft link to nothing",
              lambda f: (f["X"].__delitem__("indptr"), f["X"].__setitem__("indptr", h5py.SoftLink("/X/none"))))
    edit_h5ad(c, "link-uns-loop", "uns/loop a hard link to /uns", lambda f: f["uns"].__setitem__("loop", f["uns"]))
    edit_h5ad(c, "link-uns-deep-loop", "uns/a/b/loop a hard link to /uns/a",
              lambda f: f["uns"].create_group("a/b").__setitem__("loop", f["uns/a"]))
    def doubling(f):
        groups = [f["uns"].create_group(f"d{level}") for level in range(40)]
        for level in range(39):
            groups[level]["x"] = groups[level + 1]
            groups[level]["y"] = groups[level + 1]
    edit_h5ad(c, "link-uns-doubling", "uns hard links doubling 40 times", doubling)
    # storage layouts and filters
    def vds(f):
        layout = h5py.VirtualLayout(shape=(nnz,), dtype="f4")
        layout[:] = h5py.VirtualSource("missing-source.h5", "data", shape=(nnz,))
        del f["X/data"]
        f["X"].create_virtual_dataset("data", layout, fillvalue=0)
    edit_h5ad(c, "storage-vds", "X/data a virtual dataset over a missing file", vds)
    edit_h5ad(c, "storage-external", "X/data in a missing external raw file",
              lambda f: (f["X"].__delitem__("data"),
                         f["X"].create_dataset("data", shape=(nnz,), dtype="f4", external=[("missing.bin", 0, nnz * 4)])))
    def lzf_short(f, fraction):
        del f["X/data"]
        d = f["X"].create_dataset("data", data=data, compression="lzf", chunks=(nnz,))
        payload = data.tobytes()[: int(nnz * 4 * fraction)]
        stream = b"".join(bytes([len(payload[i:i + 32]) - 1]) + payload[i:i + 32] for i in range(0, len(payload), 32))
        d.id.write_direct_chunk((0,), stream)
    for fraction in (0.25, 0.5, 0.99):
        edit_h5ad(c, f"filter-lzf-short-{int(fraction * 100)}", "an LZF chunk that decodes short",
                  lambda f, fr=fraction: lzf_short(f, fr))
    edit_h5ad(c, "filter-deflate-garbage", "a deflate chunk of garbage",
              lambda f: (f["X"].__delitem__("data"),
                         f["X"].create_dataset("data", data=data, compression="gzip", chunks=(nnz,)).id.write_direct_chunk((0,), b"\x78\x9c garbage bytes")))
    edit_h5ad(c, "filter-fletcher", "a chunk failing its fletcher32 checksum",
              lambda f: (f["X"].__delitem__("data"),
                         f["X"].create_dataset("data", data=data, fletcher32=True, chunks=(nnz,)).id.write_direct_chunk((0,), data.tobytes() + b"\0\0\0\0")))
    # big enough for the parallel chunk decoder (2^18 elements)
    big = base_matrix(seed=3, cells=600, genes=500, density=0.95)
    bindptr, bindices, bdata = csr(big)
    bnnz = len(bindices)
    chunk = 65536
    for key, extra in {"long": 4096, "double": chunk * 4}.items():
        def edit(f, extra=extra):
            del f["X/data"]
            d = f["X"].create_dataset("data", data=bdata, shuffle=True, chunks=(chunk,))
            d.id.write_direct_chunk((chunk,), bytes(chunk * 4 + extra))
        edit_h5ad(c, f"filter-shuffle-{key}", "a shuffle chunk larger than a chunk (parallel decoder)", edit, dense=big)
    def deflate_long(f):
        import zlib
        del f["X/data"]
        d = f["X"].create_dataset("data", data=bdata, compression="gzip", shuffle=True, chunks=(chunk,))
        d.id.write_direct_chunk((chunk,), zlib.compress(bytes(chunk * 4 + 1024)))
    edit_h5ad(c, "filter-shuffle-deflate-long", "a deflate+shuffle chunk decoding too long", deflate_long, dense=big)
    def deflate_short(f):
        import zlib
        del f["X/data"]
        d = f["X"].create_dataset("data", data=bdata, compression="gzip", chunks=(chunk,))
        d.id.write_direct_chunk((0,), zlib.compress(bytes(1000)))
    edit_h5ad(c, "filter-deflate-short", "a deflate chunk decoding short (parallel decoder)", deflate_short, dense=big)
    # sizes beyond memory
    def huge_indptr(f):
        f["X"].attrs["shape"] = np.array([2**40, GENES])
        del f["X/indptr"]
        f["X"].create_dataset("indptr", shape=(2**40 + 1,), dtype="i8", chunks=(1024,))
        del f["obs"]
    edit_h5ad(c, "size-huge-cells", "2^40 cells declared, nothing stored", huge_indptr)
    edit_h5ad(c, "size-huge-obs", "obs index of 2^36 names declared",
              lambda f: (f["obs"].__delitem__("_index"),
                         f["obs"].create_dataset("_index", shape=(2**36,), dtype=h5py.string_dtype(), chunks=(1024,))))
    # nothing to analyse
    zero = np.zeros((CELLS, GENES), np.float32)
    path = c.path("all-zero.h5ad")
    write_h5ad(path, dense=zero)
    c.add("all-zero.h5ad", "run-reject", "every value zero", zero)


def heap_cases(c):
    """Corrupted global heap collections (variable-length strings)."""
    seed = c.path("heap-seed.tmp")
    write_h5ad(seed)
    raw = open(seed, "rb").read()
    os.remove(seed)
    heaps = [i for i in range(len(raw)) if raw.startswith(b"GCOL", i)]
    for number, at in enumerate(heaps[:3]):
        size = struct.unpack_from("<Q", raw, at + 8)[0]
        edits = {
            "size-huge": lambda b, at=at: struct.pack_into("<Q", b, at + 8, 2**40),
            "size-small": lambda b, at=at: struct.pack_into("<Q", b, at + 8, 16),
            "size-plus8": lambda b, at=at, size=size: struct.pack_into("<Q", b, at + 8, size + 8),
            "zero64": lambda b, at=at: b.__setitem__(slice(at + 16, at + 80), bytes(64)),
            "zero-first-object": lambda b, at=at: b.__setitem__(slice(at + 16, at + 32), bytes(16)),
            "object-size-huge": lambda b, at=at: struct.pack_into("<Q", b, at + 24, 2**40),
            "object-size-zero": lambda b, at=at: struct.pack_into("<Q", b, at + 24, 0),
            "signature": lambda b, at=at: b.__setitem__(slice(at, at + 4), b"XCOL"),
        }
        for key, edit in edits.items():
            data = bytearray(raw)
            edit(data)
            name = f"heap{number}-{key}.h5ad"
            open(c.path(name), "wb").write(bytes(data))
            c.add(name, "any", f"global heap collection {number}: {key}")


def local_heap_cases(c):
    """Corrupted local heaps (link names of old-style groups)."""
    seed = c.path("local-heap-seed.tmp")
    write_h5ad(seed)
    raw = open(seed, "rb").read()
    os.remove(seed)
    heaps = [i for i in range(len(raw)) if raw.startswith(b"HEAP", i)]
    for number, at in enumerate(heaps[:3]):
        edits = {
            "data-size-huge": lambda b, at=at: struct.pack_into("<Q", b, at + 8, 2**40),
            "data-address-huge": lambda b, at=at: struct.pack_into("<Q", b, at + 24, 2**40),
            "data-address-end": lambda b, at=at: struct.pack_into("<Q", b, at + 24, len(raw) - 8),
            "free-list": lambda b, at=at: struct.pack_into("<Q", b, at + 16, 2**30),
            "signature": lambda b, at=at: b.__setitem__(slice(at, at + 4), b"HEAQ"),
        }
        for key, edit in edits.items():
            data = bytearray(raw)
            edit(data)
            name = f"local-heap{number}-{key}.h5ad"
            open(c.path(name), "wb").write(bytes(data))
            c.add(name, "reject", f"local heap {number}: {key}")


def tenx_cases(c):
    for version in (3, 2):
        group = "matrix" if version == 3 else "GRCh38"
        path = c.path(f"valid-10x-v{version}.h5")
        dense = write_10x(path, version=version)
        c.add(f"valid-10x-v{version}.h5", "accept", f"valid 10x v{version}", dense)
        indptr, indices, data = csr(dense)
        nnz = len(indices)
        edits = {
            "shape-missing": lambda g: g.__delitem__("shape"),
            "shape-3": lambda g: replace(g, "shape", np.array([GENES, CELLS, 1])),
            "shape-neg": lambda g: replace(g, "shape", np.array([GENES, -1])),
            "shape-zero-cells": lambda g: replace(g, "shape", np.array([GENES, 0])),
            "shape-zero-genes": lambda g: replace(g, "shape", np.array([0, CELLS])),
            "shape-huge": lambda g: replace(g, "shape", np.array([GENES, 2**40])),
            "shape-float": lambda g: replace(g, "shape", np.array([8.0, 12.0])),
            "indptr-short": lambda g: replace(g, "indptr", indptr[:-1]),
            "indptr-decrease": lambda g: replace(g, "indptr", np.concatenate([[0, 5, 2], indptr[3:]])),
            "indptr-end": lambda g: replace(g, "indptr", np.concatenate([indptr[:-1], [nnz + 3]])),
            "indices-out": lambda g: replace(g, "indices", np.concatenate([[GENES + 1], indices[1:]]).astype(np.int64)),
            "indices-neg": lambda g: replace(g, "indices", np.concatenate([[-1], indices[1:]]).astype(np.int64)),
            "data-neg": lambda g: replace(g, "data", np.concatenate([[-4], data[1:]]).astype(np.int32)),
            "data-nan": lambda g: replace(g, "data", np.concatenate([[np.nan], data[1:]]).astype(np.float32)),
            "data-short": lambda g: replace(g, "data", data[:-1].astype(np.int32)),
            "barcodes-short": lambda g: replace(g, "barcodes", np.array([b"A"] * (CELLS - 1))),
            "barcodes-missing": lambda g: g.__delitem__("barcodes"),
            "barcodes-utf8": lambda g: replace(g, "barcodes", np.array([b"\xff\xfe"] + [b"B%d" % i for i in range(1, CELLS)])),
            "link-data-dangling": lambda g: (g.__delitem__("data"), g.__setitem__("data", h5py.SoftLink("/none"))),
            "link-indices-external": lambda g: (g.__delitem__("indices"), g.__setitem__("indices", h5py.ExternalLink("gone.h5", "/i"))),
        }
        if version == 3:
            edits.update({
                "features-missing": lambda g: g.__delitem__("features"),
                "features-id-short": lambda g: replace(g["features"], "id", np.array([b"E"] * (GENES - 1))),
                "features-name-utf8": lambda g: replace(g["features"], "name", np.array([b"ok"] * (GENES - 1) + [b"\xc3\x28"])),
                "features-types-short": lambda g: replace(g["features"], "feature_type", np.array([b"Gene Expression"] * (GENES - 2))),
            })
        else:
            edits.update({
                "genes-missing": lambda g: g.__delitem__("genes"),
                "gene-names-short": lambda g: replace(g, "gene_names", np.array([b"G"] * (GENES - 1))),
                "gene-names-utf8": lambda g: replace(g, "gene_names", np.array([b"\xe2\x28\xa1"] + [b"G"] * (GENES - 1))),
            })
        for key, edit in edits.items():
            name = f"10x-v{version}-{key}.h5"
            write_10x(c.path(name), version=version)
            with h5py.File(c.path(name), "r+") as f:
                edit(f[group])
            c.add(name, "reject", f"10x v{version} {key}")
            if key in ("indices-out", "indices-neg", "data-neg"):
                c.cases[-1]["values"] = True  # found when rows are read: info may pass


def mtx_cases(c):
    dense = base_matrix()
    genes, cells = GENES, CELLS
    # A single .mtx file holds cells x genes (rows are cells); a folder genes x cells.
    text = mtx_text(dense, transpose=False)
    open(c.path("valid.mtx"), "w").write(text)
    c.add("valid.mtx", "accept", "valid Matrix Market file", dense)
    with gzip.open(c.path("valid.mtx.gz"), "wt") as f:
        f.write(text)
    c.add("valid.mtx.gz", "accept", "valid gzipped Matrix Market file", dense)
    open(c.path("valid-comments.mtx"), "w").write(mtx_text(dense, comment="% a comment\n%another", transpose=False))
    c.add("valid-comments.mtx", "accept", "comments after the banner", dense)
    open(c.path("valid-crlf.mtx"), "w", newline="").write(text.replace("\n", "\r\n"))
    c.add("valid-crlf.mtx", "any", "CRLF line ends")
    open(c.path("valid-real.mtx"), "w").write(mtx_text(dense, field="real", transpose=False))
    c.add("valid-real.mtx", "accept", "real field", dense)
    write_mtx_folder(c.path("valid-folder"), dense)
    c.add("valid-folder", "accept", "valid 10x Matrix Market folder", dense)

    lines = text.splitlines()
    entries = lines[2:]
    bad = {
        "zero-genes": "%%MatrixMarket matrix coordinate integer general\n3 0 0\n",
        "zero-cells": "%%MatrixMarket matrix coordinate integer general\n0 3 0\n",
        "zero-both": "%%MatrixMarket matrix coordinate integer general\n0 0 0\n",
        "empty": "",
        "banner-only": lines[0] + "\n",
        "banner-typo": text.replace("%%MatrixMarket", "%%MatrixMarkot", 1),
        "banner-array": text.replace("coordinate", "array", 1),
        "banner-complex": text.replace("integer", "complex", 1),
        "banner-symmetric": text.replace("general", "symmetric", 1),
        "banner-short": "%%MatrixMarket matrix\n" + "\n".join(lines[1:]) + "\n",
        "size-missing-field": lines[0] + "\n8 12\n" + "\n".join(entries) + "\n",
        "size-negative": lines[0] + "\n-8 12 5\n" + "\n".join(entries) + "\n",
        "size-text": lines[0] + "\neight 12 5\n" + "\n".join(entries) + "\n",
        "size-extra": lines[0] + f"\n{lines[1]} 7\n" + "\n".join(entries) + "\n",
        "size-huge": lines[0] + "\n1000 1000000000000 0\n",
        "size-huge-genes": lines[0] + "\n100000000000 10 0\n",
        "entries-too-many-declared": lines[0] + f"\n8 12 {8 * 12 + 1}\n",
        "entries-fewer": lines[0] + "\n" + lines[1] + "\n" + "\n".join(entries[:-1]) + "\n",
        "entries-more": text + entries[0].split()[0] + " 12 1\n",
        "duplicate": lines[0] + "\n" + lines[1].rsplit(" ", 1)[0] + f" {len(entries) + 1}\n" + "\n".join(entries + [entries[0]]) + "\n",
        "row-zero": text.replace(entries[0], "0 1 5", 1),
        "row-past": text.replace(entries[0], "13 1 5", 1),
        "col-past": text.replace(entries[0], "1 9 5", 1),
        "value-nan": text.replace(entries[0], " ".join(entries[0].split()[:2]) + " nan", 1),
        "value-neg": text.replace(entries[0], " ".join(entries[0].split()[:2]) + " -3", 1),
        "value-text": text.replace(entries[0], " ".join(entries[0].split()[:2]) + " abc", 1),
        "value-float-in-int": text.replace(entries[0], " ".join(entries[0].split()[:2]) + " 2.5", 1),
        "value-missing": text.replace(entries[0], " ".join(entries[0].split()[:2]), 1),
        "value-extra": text.replace(entries[0], entries[0] + " 9", 1),
        "value-overflow": text.replace("integer", "real", 1).replace(entries[0], " ".join(entries[0].split()[:2]) + " 1e300", 1),
        "binary-junk": lines[0] + "\n" + lines[1] + "\n\x00\x01\x02\xff\xfe\n",
        "all-comments": lines[0] + "\n%\n%\n%\n",
        "index-overflow": text.replace(entries[0], "99999999999999999999 1 5", 1),
    }
    for key, body in bad.items():
        name = f"mtx-{key}.mtx"
        open(c.path(name), "w", encoding="latin-1").write(body)
        c.add(name, "reject", f"Matrix Market {key}")
    # a line longer than the reader's 16 MiB limit (gzipped: 17 KiB on disk)
    with gzip.open(c.path("mtx-long-line.mtx.gz"), "wt") as f:
        f.write(lines[0] + "\n" + lines[1] + "\n" + "1" * (17 << 20) + "\n")
    c.add("mtx-long-line.mtx.gz", "reject", "a 17 MiB line")
    # gzip damage
    blob = gzip.compress(text.encode())
    for key, data in {"truncated": blob[: len(blob) // 2], "crc": blob[:-8] + b"\0\0\0\0" + blob[-4:],
                      "body-flip": blob[:20] + bytes([blob[20] ^ 0xFF]) + blob[21:], "header-only": blob[:10]}.items():
        name = f"mtx-gz-{key}.mtx.gz"
        open(c.path(name), "wb").write(data)
        c.add(name, "reject", f"gzip {key}")
    # folders
    folder_edits = {
        "barcodes-short": {"barcodes": "".join(f"B{i}\n" for i in range(cells - 1))},
        "barcodes-long": {"barcodes": "".join(f"B{i}\n" for i in range(cells + 1))},
        "features-short": {"features": "".join(f"E{i}\tg{i}\tGene Expression\n" for i in range(genes - 1))},
        "features-one-column": {"features": "".join(f"E{i}\n" for i in range(genes))},
        "features-utf8": {"features": "".join(f"E{i}\t{'g' if i else chr(0xff)}{i}\tGene Expression\n" for i in range(genes))},
        "matrix-zero-genes": {"matrix": "%%MatrixMarket matrix coordinate integer general\n0 12 0\n"},
        "matrix-bad": {"matrix": "not a matrix\n"},
    }
    for key, kwargs in folder_edits.items():
        name = f"folder-{key}"
        write_mtx_folder(c.path(name), dense, gz=False, **kwargs)
        if key == "features-utf8":  # write raw latin-1 bytes
            with open(os.path.join(c.path(name), "features.tsv"), "wb") as f:
                f.write(b"".join((b"E%d\t\xff%d\tGene Expression\n" if i == 0 else b"E%d\tg%d\tGene Expression\n") % (i, i)
                                 for i in range(genes)))
        c.add(name, "reject", f"Matrix Market folder {key}")
    for key, missing in {"no-barcodes": "barcodes.tsv.gz", "no-features": "features.tsv.gz"}.items():
        name = f"folder-{key}"
        write_mtx_folder(c.path(name), dense)
        os.remove(os.path.join(c.path(name), missing))
        c.add(name, "reject", f"Matrix Market folder without {missing}")
    os.makedirs(c.path("folder-empty"), exist_ok=True)
    c.add("folder-empty", "reject", "an empty folder")


def special_cases(c):
    os.mkfifo(c.path("fifo.h5ad"))
    c.add("fifo.h5ad", "reject", "a FIFO named like an h5ad")
    os.symlink("/dev/zero", c.path("devzero.h5"))
    c.add("devzero.h5", "reject", "a symlink to /dev/zero")
    open(c.path("empty.h5ad"), "wb").close()
    c.add("empty.h5ad", "reject", "an empty file")
    open(c.path("text.h5ad"), "w").write("hello\n")
    c.add("text.h5ad", "reject", "text named h5ad")
    open(c.path("signature-only.h5"), "wb").write(b"\x89HDF\r\n\x1a\n" + bytes(100))
    c.add("signature-only.h5", "reject", "an HDF5 signature and zeros")


def mutation_cases(c, rng):
    """Truncations, zeroed blocks and seeded byte flips of the small seeds."""
    seeds = {}
    for name, writer in {"h5ad": lambda p: write_h5ad(p), "h5ad-gzip": lambda p: write_h5ad(p, x_kwargs={"compression": "gzip", "chunks": True}),
                         "10x-v3": lambda p: write_10x(p, version=3), "10x-v2": lambda p: write_10x(p, version=2)}.items():
        path = c.path(f"seed-{name}.tmp")
        writer(path)
        seeds[name] = open(path, "rb").read()
        os.remove(path)
    seeds["mtx"] = mtx_text(base_matrix()).encode()
    seeds["mtx-gz"] = gzip.compress(seeds["mtx"])
    suffix = {"h5ad": ".h5ad", "h5ad-gzip": ".h5ad", "10x-v3": ".h5", "10x-v2": ".h5", "mtx": ".mtx", "mtx-gz": ".mtx.gz"}
    for seed, raw in seeds.items():
        for fraction in (0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.9, 0.97, 0.995):
            name = f"trunc-{seed}-{int(fraction * 1000)}{suffix[seed]}"
            open(c.path(name), "wb").write(raw[: int(len(raw) * fraction)])
            c.add(name, "any" if seed.startswith("mtx") else "reject", f"{seed} truncated to {fraction:.1%}")
        if seed.startswith("mtx"):
            continue
        for block in range(8):
            at = rng.randrange(0, len(raw) - 64)
            data = bytearray(raw)
            data[at:at + 64] = bytes(64)
            name = f"zero-{seed}-{at}{suffix[seed]}"
            open(c.path(name), "wb").write(bytes(data))
            c.add(name, "any", f"{seed}: 64 bytes zeroed at {at}")
    names = list(seeds)
    for number in range(300):
        seed = names[number % len(names)]
        data = bytearray(seeds[seed])
        for _ in range(rng.choice((1, 1, 2, 4, 8))):
            at = rng.randrange(len(data))
            data[at] ^= 1 << rng.randrange(8) if rng.random() < 0.7 else rng.randrange(1, 256)
        name = f"flip-{seed}-{number:03d}{suffix[seed]}"
        open(c.path(name), "wb").write(bytes(data))
        c.add(name, "any", f"{seed} with seeded byte flips ({number})")


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    out = argv[1]
    sample = int(argv[argv.index("--sample") + 1]) if "--sample" in argv else None
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    corpus = Corpus(out)
    rng = random.Random(20261206)
    for make in (h5ad_cases, heap_cases, local_heap_cases, tenx_cases, mtx_cases, special_cases):
        make(corpus)
    mutation_cases(corpus, rng)
    cases = corpus.cases
    if sample:
        accepted = [case for case in cases if case["expect"] in ("accept", "run-reject")]
        others = [case for case in cases if case["expect"] not in ("accept", "run-reject")]
        wanted = max(0, sample - len(accepted))
        step = max(1, len(others) / max(1, wanted))
        chosen = [others[int(i * step)] for i in range(min(wanted, len(others)))]
        keep = {case["name"] for case in accepted + chosen}
        for case in cases:
            if case["name"] not in keep:
                target = os.path.join(out, case["name"])
                if os.path.isdir(target) and not os.path.islink(target):
                    shutil.rmtree(target)
                else:
                    os.remove(target)
        cases = accepted + chosen
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(cases, f, indent=1)
    counts = {}
    for case in cases:
        counts[case["expect"]] = counts.get(case["expect"], 0) + 1
    print(f"{len(cases)} cases in {out}: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))


if __name__ == "__main__":
    main(sys.argv)
