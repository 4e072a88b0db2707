"""Where the time of one small GPU knn call from Python goes: each piece of the Python layer
and the bare extension call, timed alone (medians of 3,000 after 50 warm-ups).

    PYTHONPATH=build/python python bench/python/profile_call.py      (needs torch with CUDA)
"""

import time, statistics, torch, numpy as np, simkit
from simkit import _simkit, _arrays as A
X = torch.randn(1000, 128, device="cuda"); q = torch.randn(1, 128, device="cuda")
D = torch.empty((1, 10), device="cuda"); I = torch.empty((1, 10), dtype=torch.int64, device="cuda")
ctx = simkit.Context(device="gpu")
def t(name, f, n=3000):
    for _ in range(50): f()
    torch.cuda.synchronize(); ts=[]
    for _ in range(n):
        t0=time.perf_counter(); f(); ts.append((time.perf_counter()-t0)*1e6)
    print(f"{name:40s} {statistics.median(ts):8.1f} us")
t("torch.empty", lambda: torch.empty((1,10), device="cuda"))
t("current_stream", lambda: torch.cuda.current_stream(X.device).cuda_stream)
t("x.__dlpack__()", lambda: X.__dlpack__())
t("array_info (nanobind import)", lambda: _simkit.array_info(X))
t("Results(q, X)", lambda: A.Results(q, X))
t("array_in", lambda: A.array_in(q, "Q"))
t("raw _simkit.knn", lambda: _simkit.knn(q, X, 10, "sqeuclidean", D, I, ctx, 0))
t("raw _simkit.knn + sync", lambda: (_simkit.knn(q, X, 10, "sqeuclidean", D, I, ctx, 0), torch.cuda.synchronize()))
t("simkit.knn", lambda: simkit.knn(q, X, 10, context=ctx))
t("simkit.knn + sync", lambda: (simkit.knn(q, X, 10, context=ctx), torch.cuda.synchronize()))
t("torch.cuda.synchronize", torch.cuda.synchronize)
Xn, qn = X.cpu().numpy(), q.cpu().numpy()
c = simkit.Context(device="cpu")
t("numpy simkit.knn cpu", lambda: simkit.knn(qn, Xn, 10, context=c))
Dn=np.empty((1,10),np.float32); In=np.empty((1,10),np.int64)
t("numpy raw _simkit.knn cpu", lambda: _simkit.knn(qn, Xn, 10, "sqeuclidean", Dn, In, c, 0))
