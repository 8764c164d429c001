#!/usr/bin/python3
"""Runs fathom-cli on every case of a corpus written by make_corpus.py and checks it
(run with Debian's /usr/bin/python3: h5py, numpy, anndata).

    run_corpus.py FATHOM_CLI CORPUS [--timeout SECONDS] [--jobs N]

For every case, `fathom-cli info` and `fathom-cli convert` (and `fathom-cli run` for
"run-reject" cases and every fourth rejected one) must
  - end by themselves within --timeout seconds (default 30): no hang;
  - exit with a code, never die from a signal: no crash;
  - "reject": exit 3 with a message on stderr that names the file (info may exit 0
    for "values" cases: broken values that only a read of the rows finds);
  - "accept": exit 0; info's shape and nnz and the converted X (read back with h5py,
    and the output opened with anndata) equal the expected matrix;
  - "run-reject": info and convert exit 0, run exits 3 naming the file;
  - "any": exit 0 or 3 (3 naming the file);
  - leave nothing behind: no "<out>.tmp-<pid>", and no output for a rejected input.
Prints one line per failure and a summary; exits 1 when any case failed.
"""
import concurrent.futures
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

INPUT_ERROR = 3


def run(command, timeout):
    start = time.monotonic()
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        return done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"), \
            time.monotonic() - start
    except subprocess.TimeoutExpired:
        return None, "", "", time.monotonic() - start


def read_x(path):
    with h5py.File(path, "r") as f:
        x = f["X"]
        if isinstance(x, h5py.Dataset):
            return np.asarray(x[...], np.float32)
        shape = tuple(int(v) for v in x.attrs["shape"])
        indptr, indices, data = x["indptr"][...], x["indices"][...], x["data"][...]
        dense = np.zeros(shape, np.float32)
        encoding = x.attrs["encoding-type"]
        encoding = encoding.decode() if isinstance(encoding, bytes) else encoding
        major = shape[0] if encoding == "csr_matrix" else shape[1]
        for row in range(major):
            for k in range(indptr[row], indptr[row + 1]):
                if encoding == "csr_matrix":
                    dense[row, indices[k]] = data[k]
                else:
                    dense[indices[k], row] = data[k]
        return dense


def check_case(cli, corpus, work, case, timeout):
    """Returns (outcome, problems): outcome is 'rejected', 'accepted', 'crash' or 'hang'."""
    path = os.path.join(corpus, case["name"])
    expect = case["expect"]
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", case["name"])
    out = os.path.join(work, stem + ".out.h5ad")
    problems = []
    outcome = None

    def command(name, args, wanted):
        nonlocal outcome
        code, stdout, stderr, seconds = run([cli, name] + args, timeout)
        where = f"{case['name']}: {name}"
        leftovers = glob.glob(glob.escape(out) + ".tmp-*")
        if leftovers:
            problems.append(f"{where}: left {leftovers[0]} behind")
            for leftover in leftovers:
                os.remove(leftover)
        if code is None:
            outcome = "hang"
            problems.append(f"{where}: no answer within {timeout} s (hang)")
            return None, stdout
        if code < 0:
            outcome = "crash"
            problems.append(f"{where}: killed by signal {signal.Signals(-code).name} (crash)\n{stderr[-2000:]}")
            return code, stdout
        if code not in wanted:
            problems.append(f"{where}: exit {code}, expected {' or '.join(map(str, wanted))}\n{stderr[-1000:]}")
        if code == INPUT_ERROR and path not in stderr:
            problems.append(f"{where}: the message does not name the file: {stderr.strip()[-500:]}")
        if code != 0 and name in ("convert", "run") and os.path.exists(out):
            problems.append(f"{where}: exit {code} but {out} was written")
        return code, stdout

    if expect == "reject":
        # "values": a problem in the stored values, found when rows are read; info
        # reads none of them for some layouts.
        command("info", [path], [0, INPUT_ERROR] if case.get("values") else [INPUT_ERROR])
        command("convert", [path, out], [INPUT_ERROR])
        if case.get("run"):
            command("run", [path, "--out", out], [INPUT_ERROR])
        outcome = outcome or "rejected"
    elif expect == "any":
        code, _ = command("info", [path], [0, INPUT_ERROR])
        convert_code, _ = command("convert", [path, out], [0, INPUT_ERROR])
        if outcome is None:
            outcome = "accepted" if code == 0 and convert_code == 0 else "rejected"
    else:  # accept, run-reject
        code, stdout = command("info", [path], [0])
        convert_code, _ = command("convert", [path, out], [0])
        expected = np.load(os.path.join(corpus, case["expected"]))
        if code == 0:
            shape = re.search(r"shape: (\d+) cells x (\d+) genes", stdout)
            nnz = re.search(r"nnz: (\d+)", stdout)
            if not shape or (int(shape[1]), int(shape[2])) != expected.shape:
                problems.append(f"{case['name']}: info shows {shape and shape.group(0)}, expected {expected.shape}")
            if not nnz or int(nnz[1]) != int(np.count_nonzero(expected)):
                problems.append(f"{case['name']}: info shows {nnz and nnz.group(0)}, expected "
                                f"{np.count_nonzero(expected)} non-zeros")
        if convert_code == 0:
            try:
                got = read_x(out)
                if got.shape != expected.shape or not np.array_equal(got, expected):
                    problems.append(f"{case['name']}: converted X differs from the expected matrix")
                import anndata  # noqa: the output must open in anndata
                anndata.read_h5ad(out)
            except Exception as error:  # noqa: any failure to read back is a finding
                problems.append(f"{case['name']}: converted output unreadable: {error}")
        if os.path.exists(out):
            os.remove(out)
        if expect == "run-reject":
            command("run", [path, "--out", out], [INPUT_ERROR])
        outcome = outcome or ("rejected" if expect == "run-reject" else "accepted")
    if os.path.exists(out):
        os.remove(out)
    return outcome, problems


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    cli, corpus = argv[1], argv[2]
    timeout = float(argv[argv.index("--timeout") + 1]) if "--timeout" in argv else 30.0
    jobs = int(argv[argv.index("--jobs") + 1]) if "--jobs" in argv else 2
    cases = json.load(open(os.path.join(corpus, "manifest.json")))
    rejected = [case for case in cases if case["expect"] == "reject"]
    for case in rejected[::4]:
        case["run"] = True
    work = tempfile.mkdtemp(prefix="fathom-corpus-out-")
    counts = {"rejected": 0, "accepted": 0, "crash": 0, "hang": 0}
    failures = []
    start = time.monotonic()
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(check_case, cli, corpus, work, case, timeout): case for case in cases}
            for future in concurrent.futures.as_completed(futures):
                outcome, problems = future.result()
                counts[outcome] += 1
                failures.extend(problems)
        left = os.listdir(work)
        if left:
            failures.append(f"outputs left behind in {work}: {left[:5]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for line in sorted(failures):
        print("FAIL " + line)
    accepted_ok = sum(1 for case in cases if case["expect"] == "accept")
    print(f"{len(cases)} files in {time.monotonic() - start:.1f} s: {counts['rejected']} rejected, "
          f"{counts['accepted']} accepted ({accepted_ok} valid files checked against their expected matrix), "
          f"{counts['crash']} crashes, {counts['hang']} hangs, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
