"""Elo's resampled update loop as machine code, built at run time from a few lines of LLVM IR (llvmlite).

Why not numba: its import and the loading of its cached machine code cost 0.5-1 s of CPU per process,
more than the whole loop at 27,000 votes (docs/notes/cliproc-32.md); llvmlite (numba's own code
generator, installed with it) imports in about 30 ms and turns this one function into machine code in
about 15-35 ms, so the compiled loop pays off from the first vote. Why not numpy: one numpy step per
vote costs ~11 calls over B resamples, and numpy's SIMD ``power`` may round differently from the C
library's ``pow`` (it does on a machine with AVX-512: 5 % of 10**x differ in the last bit), whereas
Python's ``base ** x`` and this loop both call the C library's ``pow``.

The loop (``ELO_IR``) is ``engine.rankers.elo._resampled_steps`` statement for statement: no fast-math
flag on any instruction (no reassociation, no reciprocal, no fused multiply-add: LLVM fuses only what is
flagged ``contract``), no IR optimisation passes (so ``pow(10, x)`` is never rewritten as ``exp10``),
each rating read from memory after the previous write. Hence each resample's ratings equal the
sequential ``elo_ratings`` on its repeated votes to the bit (tests/test_elo_bootstrap_batched.py).
The call goes through ctypes, which releases the GIL, so the bootstrap's draws run beside it.
"""

from __future__ import annotations

import ctypes
import functools
import threading

import numpy as np

_IR_TEMPLATE = """
declare double @pow(double, double)

define void @NAME(double* %ratings, i64 %width, i64 %nb, i64* %ii, i64* %jj, double* %ss,
                  REP* %reps, i64 %nv, double %k, double %base, double %scale) {
entry:
  br label %bloop
bloop:
  %b = phi i64 [0, %entry], [%b1, %tdone_b]
  %bdone = icmp sge i64 %b, %nb
  br i1 %bdone, label %exit, label %bbody
bbody:
  %roff = mul i64 %b, %width
  %r = getelementptr double, double* %ratings, i64 %roff
  %repoff = mul i64 %b, %nv
  %rep = getelementptr REP, REP* %reps, i64 %repoff
  br label %tloop
tloop:
  %t = phi i64 [0, %bbody], [%t1, %tnext]
  %tdone = icmp sge i64 %t, %nv
  br i1 %tdone, label %tdone_b, label %tbody
tbody:
  %pa = getelementptr i64, i64* %ii, i64 %t
  %a = load i64, i64* %pa
  %ph = getelementptr i64, i64* %jj, i64 %t
  %h = load i64, i64* %ph
  %ps = getelementptr double, double* %ss, i64 %t
  %s = load double, double* %ps
  %pc = getelementptr REP, REP* %rep, i64 %t
  %cr = load REP, REP* %pc
  %c = WIDEN
  %ra_p = getelementptr double, double* %r, i64 %a
  %rh_p = getelementptr double, double* %r, i64 %h
  br label %uloop
uloop:
  %u = phi i64 [0, %tbody], [%u1, %ubody]
  %udone = icmp sge i64 %u, %c
  br i1 %udone, label %tnext, label %ubody
ubody:
  ; e = 1 / (1 + base ** ((r[h] - r[a]) / scale)); delta = k * (s - e); r[a] += delta; r[h] -= delta
  %rh = load double, double* %rh_p
  %ra = load double, double* %ra_p
  %d = fsub double %rh, %ra
  %x = fdiv double %d, %scale
  %p = call double @pow(double %base, double %x)
  %q = fadd double 1.0, %p
  %e = fdiv double 1.0, %q
  %se = fsub double %s, %e
  %delta = fmul double %k, %se
  %ra2 = load double, double* %ra_p
  %ra3 = fadd double %ra2, %delta
  store double %ra3, double* %ra_p
  %rh2 = load double, double* %rh_p
  %rh3 = fsub double %rh2, %delta
  store double %rh3, double* %rh_p
  %u1 = add i64 %u, 1
  br label %uloop
tnext:
  %t1 = add i64 %t, 1
  br label %tloop
tdone_b:
  %b1 = add i64 %b, 1
  br label %bloop
exit:
  ret void
}
"""

_REPEAT_TYPES = {
    np.dtype(np.uint8): ("elo_steps_u8", "i8", "zext i8 %cr to i64"),
    np.dtype(np.int64): ("elo_steps_i64", "i64", "add i64 %cr, 0"),
}
"""Repeat-count dtypes the loop reads as they are (the bootstrap's one-byte draws, and the int64 table
they widen to); any other integer dtype is converted to int64 first."""

ELO_IR = "\n".join(
    _IR_TEMPLATE.replace("NAME", name).replace("REP", rep).replace("WIDEN", widen)
    for name, rep, widen in _REPEAT_TYPES.values()
).replace("declare double @pow(double, double)", "", 1)
"""The module's IR: one loop per repeat dtype (``pow`` declared once)."""

_P = ctypes.c_void_p
_I = ctypes.c_int64
_D = ctypes.c_double
_SIGNATURE = ctypes.CFUNCTYPE(None, _P, _I, _I, _P, _P, _P, _P, _I, _D, _D, _D)


_BUILD_LOCK = threading.Lock()
"""LLVM's global context is not thread-safe: the app's sessions run in threads, so one builds at a time."""


def compiled_elo_steps():
    """``_build`` once per process (under ``_BUILD_LOCK``: two app sessions asking at once build once)."""
    with _BUILD_LOCK:
        return _build()


@functools.cache
def _build():
    """The compiled loop as ``steps(ratings, i_idx, j_idx, s_i, reps, v0, k, base, scale)``: advance every
    resample's ratings (``ratings``: (B, n) float64, C-contiguous, in place) over votes v0 .. v0 + L - 1,
    resample b reading vote v0 + t ``reps[b, t]`` times in a row (``reps``: (B, L)). ``i_idx``/``j_idx``
    int64 and ``s_i`` float64, contiguous, every index in 0 .. n - 1 (the caller checks that once:
    ``engine.rankers.elo.elo_ratings_resampled``; layouts and lengths are checked here). Built once per
    process; raises ImportError without llvmlite."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly(ELO_IR)
    module.verify()
    machine = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    loops = {dt: _SIGNATURE(engine.get_function_address(name)) for dt, (name, _, _) in _REPEAT_TYPES.items()}

    def steps(ratings, i_idx, j_idx, s_i, reps, v0, k, base, scale):
        """Run the compiled loop (checks the layouts it reads through raw pointers)."""
        if ratings.dtype != np.float64 or not ratings.flags.c_contiguous or not ratings.flags.writeable:
            raise ValueError("ratings must be a writeable C-contiguous float64 array")
        if reps.dtype not in loops:
            reps = reps.astype(np.int64)
        reps = np.ascontiguousarray(reps)
        n_b, n_v = reps.shape
        if ratings.shape[0] != n_b or not (0 <= v0 and v0 + n_v <= min(i_idx.size, j_idx.size, s_i.size)):
            raise ValueError("ratings, votes and repeat counts do not line up")
        for arr, dt in ((i_idx, np.int64), (j_idx, np.int64), (s_i, np.float64)):
            if arr.dtype != dt or not arr.flags.c_contiguous:
                raise ValueError("votes must be contiguous int64 indices and float64 scores")
        at = 8 * int(v0)  # bytes to vote v0 in the int64 and float64 vote arrays
        loops[reps.dtype](ratings.ctypes.data, ratings.shape[1], n_b, i_idx.ctypes.data + at,
                          j_idx.ctypes.data + at, s_i.ctypes.data + at, reps.ctypes.data, n_v,
                          float(k), float(base), float(scale))

    steps.engine = engine  # type: ignore[attr-defined]  # the machine code lives as long as its engine
    return steps
