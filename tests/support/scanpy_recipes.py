"""Scanpy 1.9.6's recipes and PCA, step for step in NumPy / pandas, for tests where Scanpy
itself is not installed (Debian's python3 has numpy, scipy, pandas and anndata 0.8).

Each function names the Scanpy function it mirrors and keeps its dtypes: float32 X stays
float32 through filter_genes, normalize_total (float32 totals, float32 median, float32
factors), log1p and scale (float64 means/variances, float32 X); dispersions and the
per-gene moments are float64 (scanpy.preprocessing._utils._get_mean_var).

Usage: scanpy_recipes.py IN.h5ad OUT.json [--perturb SEED FIXTURE.h5ad]
  --perturb: first write FIXTURE.h5ad, IN's X (counts) with every stored value multiplied by
  an independent factor drawn uniformly from [0.3, 1.7) (float32; "ambient-corrected" or
  down-sampled counts), obs/var names kept; the recipes then run on FIXTURE.
OUT.json: {"zheng17": {...}, "seurat": {...}} with the kept cells/genes, the HVG names
(original var order) and PCA's variance_ratio.
"""
import json
import sys

import anndata
import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.stats import norm


def get_mean_var(X):
    """scanpy.preprocessing._utils._get_mean_var(X, axis=0): float64 moments, ddof=1."""
    n = X.shape[0]
    if sp.issparse(X):
        mean = np.asarray(X.sum(axis=0, dtype=np.float64)).ravel() / n
        squares = X.copy()
        squares.data = squares.data.astype(np.float64) ** 2
        mean_sq = np.asarray(squares.sum(axis=0)).ravel() / n
    else:
        mean = np.mean(X, axis=0, dtype=np.float64)
        mean_sq = np.multiply(X, X).mean(axis=0, dtype=np.float64)
    var = mean_sq - mean ** 2
    var *= n / (n - 1)
    return mean, var


def filter_genes(X, min_counts=None, min_cells=None):
    """scanpy.pp.filter_genes: np.sum(X, axis=0) (float32 for float32 X) >= min_counts, or
    np.sum(X > 0, axis=0) >= min_cells."""
    if min_counts is not None:
        number = np.asarray(X.sum(axis=0)).ravel()
        keep = number >= min_counts
    else:
        number = np.asarray((X > 0).sum(axis=0)).ravel()
        keep = number >= min_cells
    return keep


def filter_cells_min_genes(X, min_genes):
    """scanpy.pp.filter_cells(min_genes=...): np.sum(X > 0, axis=1) >= min_genes."""
    return np.asarray((X > 0).sum(axis=1)).ravel() >= min_genes


def normalize_total(X, target_sum=None):
    """scanpy.pp.normalize_total (1.9.6) with _normalize_data: counts = X.sum(1) in X's
    dtype; after = np.median(counts[counts > 0]); counts += counts == 0; counts /= after;
    sparsefuncs.inplace_row_scale(X, 1 / counts)."""
    counts = np.ravel(np.asarray(X.sum(axis=1)))
    X = sp.csr_matrix(X, dtype=np.float32) if np.issubdtype(X.dtype, np.integer) else X.copy()
    after = np.median(counts[counts > 0], axis=0) if target_sum is None else target_sum
    counts = counts + (counts == 0)
    counts = counts / after
    X.data *= np.repeat(1 / counts, np.diff(X.indptr))  # float64 factors for integer X
    return X, counts


def filter_genes_dispersion(X, flavor, n_top_genes=None, min_mean=None, max_mean=None, min_disp=None, n_bins=20):
    """scanpy.preprocessing._deprecated.highly_variable_genes.filter_genes_dispersion with
    log=False (as both recipes call it)."""
    mean, var = get_mean_var(X)
    mean[mean == 0] = 1e-12
    dispersion = var / mean
    df = pd.DataFrame()
    df["mean"] = mean
    df["dispersion"] = dispersion
    if flavor == "seurat":
        df["mean_bin"] = pd.cut(df["mean"], bins=n_bins)
        disp_grouped = df.groupby("mean_bin")["dispersion"]
        disp_mean_bin = disp_grouped.mean()
        disp_std_bin = disp_grouped.std(ddof=1)
        one_gene_per_bin = disp_std_bin.isnull()
        disp_std_bin[one_gene_per_bin.values] = disp_mean_bin[one_gene_per_bin.values].values
        disp_mean_bin[one_gene_per_bin.values] = 0
        df["dispersion_norm"] = (df["dispersion"].values - disp_mean_bin[df["mean_bin"].values].values) / disp_std_bin[
            df["mean_bin"].values
        ].values
    else:  # cell_ranger; statsmodels.robust.mad: median(|a - median(a)|) / Gaussian.ppf(3/4)
        df["mean_bin"] = pd.cut(df["mean"], np.r_[-np.inf, np.percentile(df["mean"], np.arange(10, 105, 5)), np.inf])
        disp_grouped = df.groupby("mean_bin")["dispersion"]
        disp_median_bin = disp_grouped.median()
        with np.errstate(all="ignore"):
            disp_mad_bin = disp_grouped.apply(
                lambda a: np.median(np.abs(np.asarray(a) - np.median(np.asarray(a))) / norm.ppf(0.75))
                if len(a) else np.nan
            )
            df["dispersion_norm"] = (
                np.abs(df["dispersion"].values - disp_median_bin[df["mean_bin"].values].values)
                / disp_mad_bin[df["mean_bin"].values].values
            )
    dispersion_norm = df["dispersion_norm"].values.astype("float32")
    if n_top_genes is not None:
        dispersion_norm = dispersion_norm[~np.isnan(dispersion_norm)]
        dispersion_norm[::-1].sort()
        disp_cut_off = dispersion_norm[n_top_genes - 1]
        return df["dispersion_norm"].values >= disp_cut_off
    dispersion_norm[np.isnan(dispersion_norm)] = 0
    return np.logical_and.reduce((mean > min_mean, mean < max_mean, dispersion_norm > min_disp, dispersion_norm < np.inf))


def scale(X, max_value=None):
    """scanpy.pp.scale (1.9.6) on sparse X with zero_center: X.toarray(), then
    scale_array: X -= mean; X /= std (std 0 -> 1); values > max_value clipped."""
    X = X.toarray()
    mean, var = get_mean_var(X)
    std = np.sqrt(var)
    std[std == 0] = 1
    X -= mean
    X /= std
    if max_value is not None:
        X[X > max_value] = max_value
    return X


def pca_variance_ratio(X, n_comps=50):
    """sc.pp.pca(svd_solver='arpack') = sklearn PCA: explained_variance_ / the total
    variance (np.var(X, ddof=1, axis=0).sum()); the SVD here is LAPACK's in float64."""
    n_comps = min(n_comps, min(X.shape) - 1)
    centred = X.astype(np.float64) - X.astype(np.float64).mean(axis=0)
    singular = np.linalg.svd(centred, compute_uv=False)
    variance = singular[:n_comps] ** 2 / (X.shape[0] - 1)
    total = np.var(X, ddof=1, axis=0).sum()
    return (variance / total).tolist()


def recipe_zheng17(adata, n_top_genes):
    """sc.pp.recipe_zheng17(adata, n_top_genes) (1.9.6)."""
    X = sp.csr_matrix(adata.X)
    names = np.asarray(adata.var_names)
    keep = filter_genes(X, min_counts=1)
    X, names = X[:, keep], names[keep]
    X, _ = normalize_total(X)
    hvg = filter_genes_dispersion(X, "cell_ranger", n_top_genes=n_top_genes)
    X, names = X[:, hvg], names[hvg]
    X, _ = normalize_total(X)
    X.data = np.log1p(X.data)
    X = scale(X)
    return {"n_genes_kept": int(keep.sum()), "hvg_names": names.tolist(), "variance_ratio": pca_variance_ratio(X)}


def recipe_seurat(adata):
    """sc.pp.recipe_seurat(adata) (1.9.6)."""
    X = sp.csr_matrix(adata.X)
    names = np.asarray(adata.var_names)
    cells = filter_cells_min_genes(X, 200)
    X = X[cells]
    keep = filter_genes(X, min_cells=3)
    X, names = X[:, keep], names[keep]
    X, _ = normalize_total(X, target_sum=1e4)
    hvg = filter_genes_dispersion(X, "seurat", min_mean=0.0125, max_mean=3, min_disp=0.5)
    X, names = X[:, hvg], names[hvg]
    X.data = np.log1p(X.data)
    X = scale(X, max_value=10)
    return {
        "n_cells_kept": int(cells.sum()),
        "n_genes_kept": int(keep.sum()),
        "hvg_names": names.tolist(),
        "variance_ratio": pca_variance_ratio(X),
    }


def main(argv):
    source, out = argv[1], argv[2]
    adata = anndata.read_h5ad(source)
    if len(argv) > 3 and argv[3] == "--perturb":
        rng = np.random.default_rng(int(argv[4]))
        X = sp.csr_matrix(adata.X).astype(np.float32)
        X.data = (X.data * rng.uniform(0.3, 1.7, size=X.data.shape)).astype(np.float32)
        adata = anndata.AnnData(X=X, obs=pd.DataFrame(index=adata.obs_names), var=pd.DataFrame(index=adata.var_names))
        adata.write_h5ad(argv[5])
        adata = anndata.read_h5ad(argv[5])
    n_top_genes = 1000
    json.dump({"zheng17": recipe_zheng17(adata, n_top_genes), "seurat": recipe_seurat(adata)}, open(out, "w"))


if __name__ == "__main__":
    main(sys.argv)
