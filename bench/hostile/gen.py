# builds a plausible level-3 capture with clock 1 (ns), NVTX steps, launches, syncs and device intervals
import struct, sys
sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from cwlib import *
API_RECS=[(1,1,1|(1<<8)|(2<<16),b'cudaLaunchKernel'),(1,42,4|(1<<8)|(2<<16),b'cudaStreamSynchronize'),
          (1,13,2|(1<<8)|(2<<16),b'cudaMemcpyAsync'),
          (1,1008,0|(3<<8)|(1<<16),b'nvtxRangePushA'),(1,1010,0|(3<<8)|(1<<16),b'nvtxRangePop'),(1,1001,0|(3<<8)|(1<<16),b'nvtxMarkA')]
def make(path, nsteps=4, kname=b'my_kernel', stepname=b'step', launches_per_step=2, tid=100, extra_strs=(), t0=10**9, dt=1000,
         tsfun=None, mark=None, **kw):
    strs=list(API_RECS)+[(2,0xabc,0,kname),(3,1,0,stepname),(3,2,0,kname)]+list(extra_strs)
    if mark is not None: strs.append((3,3,0,mark))
    ents=[]; seq=0; t=t0
    def add(tb,te,api,kind,a0=0,a1=0,a2=0,flags=0,depth=0,state=3,tid_=tid):
        nonlocal seq
        if tsfun: tb,te=tsfun(seq,tb,te)
        ents.append(entry(seq,tb,te,tid_,api,kind,flags,0,depth,0,a0,a1,a2,state=state)); seq+=1; return seq-1
    add(t,t,0,8); add(t,t,0,7)
    for s in range(nsteps):
        t+=dt; add(t,t,1008,2,a0=1)
        if mark is not None: add(t,t,1001,6,a0=3)
        for l in range(launches_per_step):
            t+=dt; ls=add(t,t+dt//2,1,1,a0=0x10,a1=0xabc,a2=1|(1<<32))
            add(t+dt,t+2*dt,1,12,a0=ls,a1=2,a2=7,flags=2)
        t+=3*dt; add(t,t+dt,42,1,a0=0x10)
        t+=2*dt; add(t,t,1010,3)
    t+=dt; add(t,t,0,9)
    build(path,strs,ents,clock=1,**kw)
    return ents
class Entries:
    """Entries one by one, numbered from 0, on thread 100 (`add` returns the sequence number)."""
    def __init__(self):
        self.ents = []
    def add(self, tb, te, api, kind, a0=0, a1=0, a2=0, flags=0, depth=0, result=0, node=0):
        seq = len(self.ents)
        self.ents.append(entry(seq, tb, te, 100, api, kind, flags, result, depth, node, a0, a1, a2))
        return seq
if __name__=='__main__':
    make(sys.argv[1])
