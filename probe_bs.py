import torch
M,N,K=256,5120,2880
kb,nb=-(-K//128),N//128
x=(torch.randn(M,K,device='cuda')).to(torch.float8_e4m3fn); w=(torch.randn(N,K,device='cuda')).to(torch.float8_e4m3fn)
xs=(torch.rand(kb,M,device='cuda')+0.5).t(); ws=torch.rand(nb,kb,device='cuda')+0.5
ref=((x.float().view(M,kb-1,128) if False else None))
xd=x.float()*xs.repeat_interleave(128,1)[:, :K]; wd=w.float()*ws.repeat_interleave(128,0).repeat_interleave(128,1)[:N,:K]
ref=xd@wd.t()
l4=-(-kb//4)*4
cands={'pad_t_slice':torch.nn.functional.pad(ws,(0,l4-kb)).t()[:kb],'rowmajor':ws.t().contiguous(),'colmajor':ws.t(),
 'rowmajor_padN':torch.nn.functional.pad(ws.t(),(0,0)).contiguous()}
for name,s in cands.items():
    try:
        y=torch._scaled_mm(x,w.t(),xs,s,out_dtype=torch.bfloat16,use_fast_accum=False)
        print(name, tuple(s.shape), s.stride(), 'ok rel', ((y.float()-ref).norm()/ref.norm()).item())
    except RuntimeError as e: print(name, tuple(s.shape), s.stride(), 'refused', str(e)[-200:].replace('\n',' '))
# padded K: x, w zero-padded to a multiple of 128 (what a user could do)
Kp=kb*128
xp=torch.zeros(M,Kp,device='cuda',dtype=torch.float8_e4m3fn); xp[:,:K]=x; wp=torch.zeros(N,Kp,device='cuda',dtype=torch.float8_e4m3fn); wp[:,:K]=w
for name,s in cands.items():
    try:
        y=torch._scaled_mm(xp,wp.t(),xs,s,out_dtype=torch.bfloat16,use_fast_accum=False)
        print('Kpad',name, 'ok rel', ((y.float()-ref).norm()/ref.norm()).item())
    except RuntimeError as e: print('Kpad',name,'refused', str(e)[-120:].replace('\n',' '))
