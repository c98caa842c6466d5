"""Writes the fidelity suite's data/, traces/, scenarios/ and cases/ from measurements.json.

usage: /usr/bin/python3 tests/fidelity/make_suite.py [--out DIR]   (default: this directory)

Every measured number in a case comes from measurements.json through this script, so the cases can
be checked against their sources (the bounds test regenerates them and compares). Set-up
assumptions (topology overrides, compute speeds) are written here once, with the reason.
"""
import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = HERE
refs = {}


def dump(path, obj):
    with open(f'{OUT}/{path}', 'w') as f:
        json.dump(obj, f, indent=1)
        f.write('\n')


def scenario(name, description, topology=None, network=None, model=None, batch=None, extra=None, workers=2):
    s = {'description': description, 'model': model or {'trace': '../traces/one-tensor.json'}, 'workers': workers,
         'iterations': 1 if batch is None else 10, 'warmup_iterations': 0 if batch is None else 2, 'seed': 1, 'scheme': 'wfbp'}
    if batch: s['batch_per_worker'] = batch
    if topology: s['topology'] = topology
    if network: s['network'] = network
    if extra: s.update(extra)
    dump(f'scenarios/{name}.json', s)
    return f'../scenarios/{name}.json'

def coll_case(cid, mid, category, workers, points, scen, calibrates, note=''):
    dump(f'cases/{cid}.json', {'id': cid, 'measurement': mid, 'category': category, 'role': 'calibration',
        'calibrates': calibrates, 'note': note, 'kind': 'collective', 'scenario': scen, 'collective': 'allreduce',
        'workers': workers, 'points': points})


def write_tables():
    """The OSU and nccl-tests tables in the form the tools print them (input of `sparsefuse calibrate`)."""
    osu = refs['osu_mpi_allreduce_10gbe_2_4_8_nodes']
    for n in (2, 4, 8):
        rows = osu['values'][f'{n}_nodes']
        with open(f'{OUT}/data/osu_allreduce_10gbe_{n}nodes.txt', 'w') as f:
            f.write(f"# sparsefuse fidelity data: shyhuai/B-Caffe logdata/allreduce{n}.log ({osu['source']['paper']}); {n} nodes, one MPI rank per node, 10GbE\n")
            f.write('# OSU MPI Allreduce Latency Test v5.4.0\n# Size       Avg Latency(us)\n')
            for size, t in rows:
                f.write(f'{size:<10d}{t:>18.2f}\n')
    h = refs['nccl_allreduce_dgx_h100_1node_default_algo']
    with open(f'{OUT}/data/all_reduce_perf_dgx_h100_8gpu.txt', 'w') as f:
        f.write(f"# sparsefuse fidelity data: {h['source']['url']} (commit {h['source']['commit']}), 1 node x 8 H100, NCCL default algorithm;\n")
        f.write('# the table as nccl-tests prints it; the in-place algbw column is size / in-place time (not in the excerpt)\n#\n')
        f.write('#                                                              out-of-place                       in-place\n')
        f.write('#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n')
        f.write('#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n')
        for v in h['values']:
            s = v['size_B']
            f.write(f"{s:>12d}  {s // 4:>12d}     float     sum      -1  {v['oop_time_us']:>7.2f}  {v['oop_algbw_GBps']:>6.2f}  {v['oop_busbw_GBps']:>6.2f}      0  "
                    f"{v['ip_time_us']:>7.2f}  {s / v['ip_time_us'] / 1e3:>6.2f}  {v['ip_busbw_GBps']:>6.2f}      0\n")
        # The footer nccl-tests prints; 159.151 is the excerpt's own average (see the entry's notes).
        f.write('# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 159.151\n')


def write_traces():
    """The one-tensor trace of the collective cases and GoogleNet's trace from B-Caffe's per-layer times."""
    dump('traces/one-tensor.json', {
     'format': 'sparsefuse-trace/1', 'model': 'one-tensor', 'batch_size': 1, 'dtype': 'float32',
     'description': 'one float32 gradient; sparsefuse fidelity sets its size to each measured size, so one iteration is one allreduce',
     'provenance': {'kind': 'analytic', 'method': 'fixture: 1 us forward, backward and optimizer so the collective stands alone'},
     'forward_ns': 1000, 'backward_ns': 1000, 'optimizer_ns': 1000,
     'tensors': [{'name': 'gradient', 'shape': [1], 'elements': 1, 'ready_ns': 1000}]})
    layers = refs['bcaffe_googlenet_layerwise_trace_k80_10gbe']['values']['layers_8nodes_tmp8comm']
    tensors, t = [], 0.0
    for i, L in reversed(list(enumerate(layers))):  # backward runs from the last layer to the first
        t += L['backward_us'] * 1e3
        tensors.append({'name': f'layer{i:02d}', 'shape': [L['params']], 'elements': L['params'], 'ready_ns': round(t)})
    backward = round(t); params = sum(L['params'] for L in layers)
    dump('traces/googlenet-k80-bcaffe.json', {
     'format': 'sparsefuse-trace/1', 'model': 'googlenet-k80-bcaffe', 'batch_size': 64, 'dtype': 'float32',
     'description': 'GoogleNet (Caffe, aux classifiers included, weight+bias merged per layer) on an Nvidia K80, batch 64: per-layer backward times measured by B-Caffe',
     'provenance': {'kind': 'measured', 'source': 'shyhuai/B-Caffe logdata/tmp8comm.log, commit afc8063d',
                    'method': 'per-layer backward_us of shyhuai/B-Caffe logdata/tmp8comm.log (commit afc8063d, MG-WFBP, INFOCOM 2019), layers reversed into gradient-ready order; '
                    'forward_ns is NOT measured: backward / 2 (the analytic traces\' rule); optimizer_ns is NOT measured: SGD with momentum, 20 B per parameter at 240 GB/s (one K80 GPU\'s memory bandwidth, datasheet)'},
     'forward_ns': backward // 2, 'backward_ns': backward, 'optimizer_ns': round(params * 20 / 240e9 * 1e9),
     'tensors': tensors})


def nccl_cases():
    """nccl-tests (and torch-level) allreduce tables: checks of the NCCL model on matching topologies."""
    NCCL_CHECK = 'nothing: checks the nccl model as it stands'
    dgx = {'preset': 'dgx-h200-ib400'}
    # A100 and V100 NVSwitch/NVLink have no multicast (NVLS needs Hopper's NVSwitch); AWS nodes use EFA.
    no_nvls = {'nvls': False}
    efa = {'transport': {'kind': 'efa'}}
    # 1 node x 8 H100 (NVLink4/NVSwitch = the dgx preset's node)
    h = refs['nccl_allreduce_dgx_h100_1node_default_algo']
    coll_case('nccl_h100_1node_8gpu', h['id'], 'nccl-tests', 8,
              [{'bytes': v['size_B'], 'measured_us': v['oop_time_us']} for v in h['values']],
              scenario('nccl_h100_1node_8gpu', '1 node x 8 H100, NVLink4 + NVSwitch (dgx-h200-ib400 node), one allreduce', {**dgx, 'gpu': 'h100'}, workers=8),
              'NVLS (kNvlsEfficiency, kNvlsLatencyUs: fitted on this table at >= 4 MiB)', 'NCCL default algorithm: NVLS from a few MiB')
    # 1 node x 8 H200: busbw -> time = size / (busbw * n / (2(n-1)))
    r = refs['nccl_allreduce_8xh200_1node_nccltests_vs_torch']
    coll_case('nccl_h200_1node_8gpu', r['id'], 'nccl-tests', 8,
              [{'bytes': v['size_B'], 'measured_us': round(v['size_B'] / (v['busbw_nccltests'] * 8 / 14) / 1e3, 3)} for v in r['values']],
              scenario('nccl_h200_1node_8gpu', '1 node x 8 H200, NVLink4 + NVSwitch, one allreduce', dgx, workers=8),
              'nothing: held out from the NVLS fit (same NVLink4 NVSwitch node as the H100 table)', 'time from busbw (nccl-tests column) as size / (busbw * 8/14); NVLS from 2 MiB')
    two = [('nccl_a100_p4de_2node_efa400', 'nccl_allreduce_2node_aws_p4de_a100_efa400', 16,
            {'preset': 'dgx-h200-ib400', 'gpu': 'a100-80gb', 'intra': {'bandwidth_gbps': 2400, **no_nvls}, 'nic': {'per_node': 4, 'bandwidth_gbps': 100, **efa}},
            '2 x p4de: 8 A100 (NVLink3 300 GB/s per direction) + 4 x 100 Gb/s EFA per node', 'NCCL tree puts half the traffic on NVLink at 2 nodes'),
           ('nccl_h100_p5_2node_efa3200', 'nccl_allreduce_2node_aws_p5_h100_efa3200', 16,
            {'preset': 'dgx-h200-ib400', 'gpu': 'h100', 'nic': {'per_node': 8, 'bandwidth_gbps': 400, **efa}},
            '2 x p5: 8 H100 + 32 x 100 Gb/s EFA per node (as 8 x 400 Gb/s, one per GPU)', 'NVLSTree/Tree at 2 nodes (NVLSTree not modelled); EFA transport'),
           ('nccl_h100_a3mega_2node_tcpxo', 'nccl_allreduce_2node_gcp_a3mega_h100', 16,
            {'preset': 'dgx-h200-ib400', 'gpu': 'h100', 'nic': {'per_node': 8, 'bandwidth_gbps': 200}},
            '2 x GCP A3 Mega: 8 H100 + 8 x 200 Gb/s GPUDirect-TCPXO NICs per node', 'TCP-offload transport (a NIC-offloaded plugin, not kernel sockets): modelled with the default rdma transport')]
    fitted = {'nccl_h100_p5_2node_efa3200': 'the efa message latency (22 us: the 8 B - 1 KiB times)'}
    for cid, mid, workers, topo, desc, note in two:
        coll_case(cid, mid, 'nccl-tests', workers, [{'bytes': v['size_B'], 'measured_us': v['oop_time_us']} for v in refs[mid]['values']],
                  scenario(cid, desc + ', one allreduce', topo, workers=workers), fitted.get(cid, NCCL_CHECK), note)
    r = refs['nccl_allreduce_3node_a100_4xhdr200_partial']
    coll_case('nccl_a100_3node_hdr200x4', r['id'], 'nccl-tests', 24, [{'bytes': v['size_B'], 'measured_us': v['time_us']} for v in r['values']],
              scenario('nccl_a100_3node_hdr200x4', '3 nodes x 8 A100-SXM4 + 4 x 200 Gb/s HDR IB per node, one allreduce',
                       {'preset': 'dgx-h200-ib400', 'gpu': 'a100-40gb', 'intra': {'bandwidth_gbps': 2400, **no_nvls}, 'nic': {'per_node': 4, 'bandwidth_gbps': 200}}, workers=24),
              'the rdma transport efficiency (0.96 = measured bus bandwidth over the NICs\' line rate)', 'three sizes near 128 MB (linear step sweep)')
    r = refs['nccl_allreduce_p3dn_v100_efa_small_msg_latency_2_4_8_nodes']
    topo = {'preset': 'dgx-h200-ib400', 'gpu': 'v100', 'intra': {'bandwidth_gbps': 1200, **no_nvls}, 'nic': {'per_node': 1, 'bandwidth_gbps': 100, **efa}}
    scen = scenario('nccl_v100_p3dn_efa100', 'p3dn: 8 V100 (NVLink2 hybrid cube-mesh, approximated as a 150 GB/s-per-direction switch) + 1 x 100 Gb/s EFA per node, one allreduce', topo, workers=16)
    for n in (2, 4, 8):
        coll_case(f'nccl_v100_p3dn_efa100_{n}node', r['id'], 'nccl-tests', 8 * n,
                  [{'bytes': s, 'measured_us': t} for s, t in zip(r['values']['sizes_B'], r['values'][f'time_us_{n}nodes'])],
                  scen, NCCL_CHECK, 'sizes 8 B - 32 KiB only: a latency check; 2019 EFA stack')
    r = refs['allreduce_4node_8xb200_torch_efa']
    coll_case('torch_b200_4node_efa', r['id'], 'nccl-tests', 32,
              [{'bytes': v['size_B'], 'measured_us': round(v['size_B'] / (v['busbw'] * 32 / 62) / 1e3, 3)} for v in r['values']],
              scenario('torch_b200_4node_efa', '4 nodes x 8 B200 (NVLink5 900 GB/s per direction) + 8 x 400 Gb/s EFA per node, one allreduce',
                       {'preset': 'dgx-h200-ib400', 'gpu': 'b200', 'intra': {'bandwidth_gbps': 7200}, 'nic': efa}, workers=32),
              'the efa transport efficiency (0.94: bus bandwidth at >= 1 GiB over the NICs\' line rate)', 'torch.distributed all_reduce timing, not nccl-tests; time from busbw as size / (busbw * 32/62)')


def osu_cases():
    """B-Caffe's OSU tables: the default model, the held-out calibration and the fitted one; the per-layer cross-check."""
    # OSU 10GbE (B-Caffe's cluster): the default model, the held-out calibration, the fitted calibration
    osu = refs['osu_mpi_allreduce_10gbe_2_4_8_nodes']
    def osu_points(n, held=False):
        return [dict({'bytes': s, 'measured_us': t}, **({'held_out': True} if held else {})) for s, t in osu['values'][f'{n}_nodes']]
    s10 = scenario('osu_10gbe', 'B-Caffe cluster: one MPI rank per node on 10 Gb/s Ethernet (ethernet-10g preset, default model), one allreduce', {'preset': 'ethernet-10g'})
    for n in (2, 4, 8):
        coll_case(f'osu_10gbe_{n}node', osu['id'], 'osu', n, osu_points(n), s10, 'nothing: the default (uncalibrated) model on ethernet-10g',
                  'MPI over TCP with host buffers, modelled by the nccl model of the preset')
    coll_case('osu_10gbe_8node_heldout', osu['id'], 'osu', 8, osu_points(8, True),
              scenario('osu_10gbe_calibrated_holdout8', 'the same cluster, network calibrated on OSU 2 and 4 nodes only (8 held out)', {'preset': 'ethernet-10g'},
                       {'model': 'calibrated', 'profile': '../calibrations/10gbe-mpi-holdout8.json'}),
              'alpha and bus bandwidth per size range of the 10gbe / MPI link class (calibrations/10gbe-mpi-holdout8.json, from OSU 2 and 4 nodes)',
              'held-out node count: the fit never saw these rows')
    cal = scenario('osu_10gbe_calibrated', 'the same cluster, network calibrated on OSU 2, 4 and 8 nodes', {'preset': 'ethernet-10g'},
                   {'model': 'calibrated', 'profile': '../calibrations/10gbe-mpi.json'})
    for n in (2, 4):
        coll_case(f'osu_10gbe_{n}node_fitted', osu['id'], 'osu', n, osu_points(n), cal,
                  'alpha and bus bandwidth per size range of the 10gbe / MPI link class (calibrations/10gbe-mpi.json)', 'fit error: these rows were fitted')
    b = refs['bcaffe_googlenet_layerwise_trace_k80_10gbe']
    coll_case('bcaffe_googlenet_layer_allreduce_8node', b['id'], 'per-layer-trace', 8,
              [{'bytes': L['params'] * 4, 'measured_us': L['allreduce_us']} for L in b['values']['layers_8nodes_tmp8comm']], cal,
              'nothing: a cross-check of the OSU calibration on the same cluster (GPU gradients staged through the host)',
              'per-layer allreduce of GoogleNet gradients in B-Caffe at 8 nodes')


def scaling_case(cid, mid, metric, scen, points, note, compare=False, base=1):
    dump(f'cases/{cid}.json', {'id': cid, 'measurement': mid, 'category': 'end-to-end', 'role': 'validation', 'note': note,
        'kind': 'scaling', 'metric': metric, 'base_workers': base, 'compare_methods': compare, 'scenario': scen, 'points': points})


def mgwfbp_case():
    """MG-WFBP's real-cluster speedups (validation only)."""
    # ---- end-to-end (validation only) ----
    m = refs['mgwfbp_infocom19_realdata_k80_10gbe']
    s = scenario('mgwfbp_googlenet_k80_10gbe', 'MG-WFBP real-cluster set-up: GoogleNet batch 64 on K80 (B-Caffe per-layer backward), one rank per node, 10GbE MPI allreduce calibrated from OSU',
                 {'preset': 'ethernet-10g'}, {'model': 'calibrated', 'profile': '../calibrations/10gbe-mpi.json'},
                 {'trace': '../traces/googlenet-k80-bcaffe.json'}, 64, workers=8)
    pts = [{'scheme': sch, 'workers': n, 'measured': m['values']['speedup_GoogleNet'][name][i]}
           for name, sch in (('WFBP', 'wfbp'), ('MG-WFBP', 'mgwfbp'), ('SyncEASGD', 'syncea')) for i, n in enumerate((1, 2, 4, 8)) if n > 1]
    scaling_case('mgwfbp_googlenet_k80_10gbe', m['id'], 'speedup', s, pts,
                 'speedup over 1 node of WFBP, MG-WFBP and SyncEASGD; one worker per node assumed; forward time assumed backward/2', True)


def dle_and_horovod_cases():
    """DeepLearningExamples and Horovod scaling (validation only); compute from datasheets, never from these numbers."""
    V100 = 15.7 * 0.5 / 100  # FP32 datasheet peak x 0.5 sustained, against the traces' 100 TFLOP/s
    d = refs['dle_resnet50v15_pytorch_throughput']
    one = {x['system'] + str(x['gpus']): x for x in d['values']}
    eff = one['DGX-1 V100 16GB8']['fp32'] / (8 * one['DGX-1 V100 16GB1']['fp32'])
    # V100 NVLink has no NVSwitch multicast (no NVLS).
    dgx1 = {'preset': 'dgx-h200-ib400', 'gpu': 'v100', 'intra': {'bandwidth_gbps': 1200, 'nvls': False}, 'nic': {'per_node': 4, 'bandwidth_gbps': 100}}
    compute = {'variability': {'node_speed_factors': [V100]}}
    s = scenario('dle_resnet50_dgx1v_fp32', 'DGX-1 V100 16GB, ResNet-50 FP32 batch 112, DDP; NVLink cube-mesh approximated as a 150 GB/s-per-direction switch; V100 compute at 15.7 TFLOP/s x 0.5 against the trace\'s 100 (node_speed_factors)',
                 dgx1, None, 'resnet50', 112, compute, workers=8)
    scaling_case('dle_resnet50_dgx1v_fp32', d['id'], 'scaling_efficiency', s, [{'scheme': 'ddp', 'workers': 8, 'measured': round(eff, 4)}],
                 '8-GPU throughput / (8 x 1-GPU throughput) from the README table')
    bert = refs['dle_bert_large_pytorch_v100_throughput']['values']
    def bert_points(rows):
        base = [x for x in rows if x['gpus'] == 1 and x.get('bs') == 4][0]['fp32']
        return [{'scheme': 'ddp', 'workers': x['gpus'], 'measured': round(x['fp32'] / (x['gpus'] * base), 4)} for x in rows if x.get('bs') == 4 and x['gpus'] > 1 and 'fp32' in x]
    s = scenario('dle_bert_large_squad_dgx1v_fp32', 'DGX-1 V100 16GB, BERT-large SQuAD fine-tuning FP32 batch 4 seq 384, DDP; compute as for ResNet-50', dgx1, None, 'bert-large', 4, compute, workers=8)
    scaling_case('dle_bert_large_squad_dgx1v_fp32', 'dle_bert_large_pytorch_v100_throughput', 'scaling_efficiency', s, bert_points(bert['finetune_squad_seq384_DGX1_16G']),
                 'n-GPU throughput / (n x 1-GPU throughput), FP32 batch 4, no gradient accumulation')
    dgx2 = {'preset': 'dgx-h200-ib400', 'gpu': 'v100', 'gpus_per_node': 16, 'intra': {'bandwidth_gbps': 1200, 'nvls': False}}
    s = scenario('dle_bert_large_squad_dgx2_fp32', 'DGX-2 (16 V100 on NVSwitch, 150 GB/s per direction), BERT-large SQuAD FP32 batch 4, DDP', dgx2, None, 'bert-large', 4, compute, workers=16)
    scaling_case('dle_bert_large_squad_dgx2_fp32', 'dle_bert_large_pytorch_v100_throughput', 'scaling_efficiency', s, bert_points(bert['finetune_squad_seq384_DGX2']),
                 'n-GPU throughput / (n x 1-GPU throughput), FP32 batch 4')
    hv = refs['horovod_512gpu_scaling_efficiency']
    P100 = 9.3 * 0.5 / 100
    # The Horovod paper's servers are joined by RoCE-capable 25 Gb/s Ethernet: RDMA, not kernel TCP.
    s = scenario('horovod_vgg16_512gpu_25gbe', '128 servers x 4 Pascal GPUs (P100 PCIe: 9.3 TFLOP/s x 0.5), PCIe Gen3 inside, one 25 Gb/s RoCE NIC per server; VGG-16 batch 64, Horovod',
                 {'preset': 'ethernet-25g', 'gpu': 'p100', 'gpus_per_node': 4, 'intra': {'kind': 'pcie', 'bandwidth_gbps': 126}, 'nic': {'transport': {'kind': 'rdma'}}}, None, 'vgg16', 64,
                 {'variability': {'node_speed_factors': [P100]}}, workers=512)
    scaling_case('horovod_vgg16_512gpu_25gbe', hv['id'], 'scaling_efficiency', s,
                 [{'scheme': 'horovod', 'workers': 512, 'measured': [x for x in hv['values'] if x['model'] == 'VGG-16'][0]['scaling_efficiency']}],
                 'VGG-16 only: no Inception V3 or ResNet-101 trace in the repository')


def main():
    global OUT, refs
    parser = argparse.ArgumentParser()
    parser.add_argument('--out', default=HERE)
    OUT = parser.parse_args().out
    with open(os.path.join(HERE, 'measurements.json'), encoding='utf-8') as f:
        refs.update({r['id']: r for r in json.load(f)['references']})
    for d in ('cases', 'scenarios', 'traces', 'data'):
        os.makedirs(f'{OUT}/{d}', exist_ok=True)
    write_tables()
    write_traces()
    nccl_cases()
    osu_cases()
    mgwfbp_case()
    dle_and_horovod_cases()


if __name__ == '__main__':
    main()
