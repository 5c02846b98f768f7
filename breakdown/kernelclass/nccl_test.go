package kernelclass

import (
	"testing"

	"github.com/stepstat/stepstat/nsys/nsystest"
)

func TestDecodeNCCL(t *testing.T) {
	tests := []struct {
		name string
		want NCCLKernel
		ok   bool
	}{
		{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", NCCLKernel{"AllReduce", "Sum", "RING", "LL", "bf16"}, true},
		{"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)", NCCLKernel{"AllReduce", "Sum", "RING", "LL", "f32"}, true},
		{"ncclDevKernel_AllReduce_Sum_u64_RING_LL", NCCLKernel{"AllReduce", "Sum", "RING", "LL", "u64"}, true},
		{"ncclDevKernel_Reduce_Sum_bf16_RING_LL", NCCLKernel{"Reduce", "Sum", "RING", "LL", "bf16"}, true},
		{"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL128", NCCLKernel{"ReduceScatter", "Sum", "RING", "LL128", "bf16"}, true},
		{"ncclDevKernel_AllReduce_Sum_bf16_NVLS_SIMPLE", NCCLKernel{"AllReduce", "Sum", "NVLS", "SIMPLE", "bf16"}, true},
		{"ncclDevKernel_AllReduce_Sum_bf16_NVLS_TREE_SIMPLE", NCCLKernel{"AllReduce", "Sum", "NVLS_TREE", "SIMPLE", "bf16"}, true},
		{"ncclDevKernel_AllReduce_Sum_f16_COLLNET_DIRECT_SIMPLE", NCCLKernel{"AllReduce", "Sum", "COLLNET_DIRECT", "SIMPLE", "f16"}, true},
		{"ncclDevKernel_AllReduce_Sum_f16_COLLNET_CHAIN_SIMPLE", NCCLKernel{"AllReduce", "Sum", "COLLNET_CHAIN", "SIMPLE", "f16"}, true},
		{"ncclDevKernel_AllReduce_MinMax_i32_TREE_LL", NCCLKernel{"AllReduce", "MinMax", "TREE", "LL", "i32"}, true},
		{"ncclDevKernel_AllReduce_PreMulSum_f8e4m3_RING_SIMPLE", NCCLKernel{"AllReduce", "PreMulSum", "RING", "SIMPLE", "f8e4m3"}, true},
		{"ncclDevKernel_AllGather_RING_LL", NCCLKernel{Op: "AllGather", Algo: "RING", Proto: "LL"}, true},
		{"ncclDevKernel_AllGather_PAT_SIMPLE", NCCLKernel{Op: "AllGather", Algo: "PAT", Proto: "SIMPLE"}, true},
		{"ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)", NCCLKernel{Op: "Broadcast", Algo: "RING", Proto: "LL"}, true},
		{"ncclDevKernel_SendRecv", NCCLKernel{Op: "SendRecv"}, true},
		{"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", NCCLKernel{Op: "SendRecv"}, true},
		{"ncclDevKernel_Generic", NCCLKernel{Op: "Generic"}, true},
		{"ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", NCCLKernel{Op: "Generic"}, true},
		{"ncclKernel_AllReduce_RING_LL_Sum_half(ncclDevComm*, unsigned long, ncclWork*)", NCCLKernel{"AllReduce", "Sum", "RING", "LL", "half"}, true},
		{"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", NCCLKernel{"AllReduce", "Sum", "RING", "LL", "float"}, true},
		{"void ncclKernel_AllReduce_TREE_LL128_Prod_float(ncclDevComm*, unsigned long, ncclWork*)", NCCLKernel{"AllReduce", "Prod", "TREE", "LL128", "float"}, true},
		{"ncclKernel_AllReduce_RING_SIMPLE_Sum___nv_bfloat16", NCCLKernel{"AllReduce", "Sum", "RING", "SIMPLE", "__nv_bfloat16"}, true},
		{"ncclKernel_ReduceScatter_RING_LL_Sum_int8_t", NCCLKernel{"ReduceScatter", "Sum", "RING", "LL", "int8_t"}, true},
		{"ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", NCCLKernel{Op: "AllGather", Algo: "RING", Proto: "LL"}, true},
		{"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", NCCLKernel{Op: "SendRecv", Algo: "RING", Proto: "SIMPLE"}, true},
		{"ncclAllReduceRingLLKernel_sum_f16(CollectiveArgs)", NCCLKernel{"AllReduce", "Sum", "RING", "LL", "f16"}, true},
		{"ncclAllReduceTreeLL128Kernel_prod_f32", NCCLKernel{"AllReduce", "Prod", "TREE", "LL128", "f32"}, true},
		{"ncclAllGatherRingKernel_copy_i8", NCCLKernel{Op: "AllGather", Algo: "RING", Proto: "SIMPLE"}, true},
		{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL_v2", NCCLKernel{"AllReduce", "Sum", "RING", "LL", "bf16"}, true},
		{"ncclDevKernel_", NCCLKernel{}, false},
		{"ncclKernel____", NCCLKernel{}, false},
		{"ncclDevKernel_1AllReduce", NCCLKernel{}, false},
		{"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*)", NCCLKernel{}, false},
		{"nvjet_sm90_tst_128x8_64x12_2x1_v_bz_NNT", NCCLKernel{}, false},
		{"pcclKernel_twoShotAllReduceKernel", NCCLKernel{}, false},
		{"", NCCLKernel{}, false},
	}
	for _, tt := range tests {
		got, ok := DecodeNCCL(tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("DecodeNCCL(%q) = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// TestDecodeNCCLClassified checks that every NCCL name of the corpus decodes, and that the
// decoded op agrees with the category.
func TestDecodeNCCLClassified(t *testing.T) {
	for _, tc := range readKernelNames(t) {
		k, ok := DecodeNCCL(tc.name)
		if !ok {
			continue
		}
		if (k.Op == "AllReduce") != (tc.want == AllReduce) {
			t.Errorf("%q: op %s, category %v", tc.name, k.Op, tc.want)
		}
		if tc.want != AllReduce && tc.want != Collective {
			t.Errorf("%q decodes as NCCL but is %v", tc.name, tc.want)
		}
	}
}

func FuzzDecodeNCCL(f *testing.F) {
	nsystest.NeedSeeds(f)
	f.Fuzz(func(t *testing.T, name string) {
		k, ok := DecodeNCCL(name)
		if ok && k.Op == "" {
			t.Fatalf("DecodeNCCL(%q) = %+v, true with no op", name, k)
		}
		if !ok && k != (NCCLKernel{}) {
			t.Fatalf("DecodeNCCL(%q) = %+v, false with fields set", name, k)
		}
	})
}
