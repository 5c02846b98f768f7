package kernelclass

import "testing"

func TestNormalize(t *testing.T) {
	tests := []struct{ name, want string }{
		// nvjet tile, raster, cooperative and split-K variants of one GEMM compare equal.
		{"nvjet_sm90_tst_128x8_64x12_2x1_v_bz_NNT", "nvjet_sm90_tst_NxN_NxN_NxN_bz_NNT"},
		{"nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "nvjet_sm90_tst_NxN_NxN_NxN_bz_NNT"},
		{"nvjet_sm90_tst_64x8_64x16_1x1_h_bz_splitK_NNT", "nvjet_sm90_tst_NxN_NxN_NxN_bz_NNT"},
		{"nvjet_sm90_tst_128x8_64x12_4x1_v_bz_splitK_TNT", "nvjet_sm90_tst_NxN_NxN_NxN_bz_TNT"},
		{"nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN", "nvjet_tst_NxN_NxN_NxN_bz_bias_TNN"},
		// cuBLAS sm80/sm90 and ampere kernels.
		{"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
			"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesizeNxN_warpgroupsizeNxN_execute_segment_k_off_kernel__5x_cublas"},
		{"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
			"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesizeNxN_stageN_warpsizeNxN_ffma_alignaN_aligncN_execute_kernel__5x_cublas"},
		{"ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x3_tn", "ampere_bf16_s16816gemm_bf16_NxN_ldgN_f2f_stages_NxN_tn"},
		{"ampere_sgemm_128x64_tn", "ampere_sgemm_NxN_tn"},
		// CUTLASS wrappers keep the kernel they wrap.
		{"void cutlass::Kernel2<cutlass_80_wmma_tensorop_s161616gemm_f16_32x32_128x2_tn_align8>(T1::Params)",
			"cutlass::Kernel2<cutlass_80_wmma_tensorop_s161616gemm_f16_NxN_NxN_tn_alignN>"},
		{"void cutlass::Kernel2<cutlass_80_wmma_tensorop_s161616gemm_f16_64x64_64x2_tn_align4>(T1::Params)",
			"cutlass::Kernel2<cutlass_80_wmma_tensorop_s161616gemm_f16_NxN_NxN_tn_alignN>"},
		{"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1>>, 128>>>>(T1::Params)",
			"cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90>>"},
		{"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, void, void>>(T1::Params)",
			"cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal>"},
		// cuDNN knobs and shapes.
		{"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0",
			"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_N_NxN_NxN_cgaNxN_kernel0_0"},
		{"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_128x128x128_2x1x1_cga1x1x1_kernel0_0",
			"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_N_NxN_NxN_cgaNxN_kernel0_0"},
		// Template arguments and argument lists go; anonymous namespaces stay.
		{"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
			"at::native::vectorized_elementwise_kernel"},
		{"void at::native::<unnamed>::CatArrayBatchedCopy_vectorized<at::native::<unnamed>::OpaqueType<(unsigned int)2>, unsigned int, (int)1>(char *, int)",
			"at::native::<unnamed>::CatArrayBatchedCopy_vectorized"},
		{"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
			"at::native::(anonymous namespace)::cunn_SoftMaxForward"},
		{"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
			"vllm::cross_device_reduce_1stage"},
		{"void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, float, float, float, true, false, false>(cublasLt::cublasSplitKParams<float>, float const*)",
			"cublasLt::splitKreduce_kernel"},
		// NCCL names keep op, type, algorithm and protocol.
		{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"},
		// Generated kernels lose their serial numbers.
		{"triton_poi_fused_mul_silu_slice_4", "triton_poi_fused_mul_silu_slice_N"},
		{"<unnamed>::nvfuser_pointwise_f0_c1_r0_g4(<unnamed>::Tensor<float, (int)2, (int)2>)", "<unnamed>::nvfuser_pointwise_fN_cN_rN_gN"},
		// Plain names and odd input.
		{"vecAdd(double *, double *, double *, int)", "vecAdd"},
		{"  void  gemv2T_kernel_val<int>(x)", "gemv2T_kernel_val"},
		{"void void foo", "foo"},
		{"foo<bar", "foo"},
		{"foo>bar", "foobar"},
		{"<int>", "<int>"},
		{"", ""},
	}
	for _, tt := range tests {
		got := Normalize(tt.name)
		if got != tt.want {
			t.Errorf("Normalize(%q)\n got %q\nwant %q", tt.name, got, tt.want)
		}
		if again := Normalize(got); again != got {
			t.Errorf("Normalize(%q) = %q, not idempotent", got, again)
		}
	}
}

// TestNormalizeKeepsOperations checks that names of different operations stay apart.
func TestNormalizeKeepsOperations(t *testing.T) {
	pairs := [][2]string{
		{"nvjet_sm90_tst_128x8_64x12_2x1_v_bz_NNT", "nvjet_sm90_tst_128x8_64x12_2x1_v_bz_TNT"},
		{"nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN", "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN"},
		{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "ncclDevKernel_AllReduce_Sum_bf16_TREE_LL"},
		{"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<int>>>(T1::Params)",
			"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<int>>(T1::Params)"},
	}
	for _, p := range pairs {
		if a, b := Normalize(p[0]), Normalize(p[1]); a == b {
			t.Errorf("Normalize(%q) == Normalize(%q) == %q", p[0], p[1], a)
		}
	}
}

// TestNormalizeCorpus checks that every corpus name normalises idempotently and to a name
// with no argument list.
func TestNormalizeCorpus(t *testing.T) {
	for _, tc := range readKernelNames(t) {
		n := Normalize(tc.name)
		if n == "" && tc.name != "" {
			t.Errorf("Normalize(%q) is empty", tc.name)
		}
		if Normalize(n) != n {
			t.Errorf("Normalize(%q) = %q, not idempotent", tc.name, n)
		}
	}
}
