"""Kernel names: demangling, families and short names, pinned on real kernel names.

Mangled names come from the H200 fixtures and the public samples; demangled ones are as PyTorch,
cuBLAS, cuDNN, NCCL and Triton print them (the classifier reads both).
"""
from __future__ import annotations

import pytest

from graphlab.graph.demangle import demangle, demangler_available
from graphlab.graph.kernel_names import FAMILIES, classify_kernel, describe_kernel, function_path, short_kernel_name

needs_demangler = pytest.mark.skipif(not demangler_available(), reason="no C++ runtime with __cxa_demangle")

# (name as the driver reports it, family, short name)
REAL_NAMES = [
    # cuBLAS / cuBLASLt (H200 fixtures, issue #126753, candle samples)
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
     "cuBLAS", "gemm 32x32 (cuBLAS)"),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x128x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
     "cuBLAS", "gemm 32x128 (cuBLAS)"),
    ("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
     "cuBLAS", "gemm 128x128 (cuBLAS)"),
    ("ampere_sgemm_128x64_tn", "cuBLAS", "gemm 128x64 (cuBLAS)"),
    ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn", "cuBLAS", "gemm 128x128 (cuBLAS)"),
    ("volta_sgemm_64x32_sliced1x4_nn", "cuBLAS", "gemm 64x32 (cuBLAS)"),
    ("nvjet_tst_128x64_64x4_2x1_v_bz_coopA_TNT", "cuBLAS", "gemm 128x64 (cuBLAS)"),
    ("nvjet_hsh_256x128_64x4_2x1_v_bz_coopB_NNT", "cuBLAS", "gemm 256x128 (cuBLAS)"),
    ("_ZN8internal5gemvx6kernelIii13__nv_bfloat16S2_S2_fLb1ELb1ELb1ELb0ELi7ELb0E18cublasGemvParamsExIi30cublasGemvTensor"
     "StridedBatchedIKS2_ES6_S4_IS2_EfEEENSt9enable_ifIXT5_EvE4typeET11_", "cuBLAS", "gemv (cuBLAS)"),
    ("void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, cublasGemvParamsEx<int, "
     "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, "
     "cublasGemvTensorStridedBatched<float>, float> >(cublasGemvParamsEx<int>, float, float)", "cuBLAS", "gemv (cuBLAS)"),
    ("void gemmSN_TN_kernel<float, 128, 16, 2, 4, 8, 9, false, cublasGemvTensorStridedBatched<float const>, "
     "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float> >(cublasGemmSmallNParams<float>)",
     "cuBLAS", "gemm small-N (cuBLAS)"),
    ("void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, float, float, float, true, false, "
     "false, false>(cublasLt::cublasSplitKParams<float>, float const*, float const*, float*)", "cuBLAS",
     "split-K reduce (cuBLAS)"),
    ("void cublasLt::epilogue::impl::globalKernel<8, 32, float, float, float, true, true, 1>(int, int, long, float*, "
     "cublasLtEpilogue_t, int, float*, long, float*)", "cuBLAS", "epilogue (cuBLAS)"),
    ("void sgemm_largek_lds64<true, false, 5, 5, 4, 4, 4, 34>(float*, float const*, float const*, int, int, int)",
     "cuBLAS", "gemm large-K (cuBLAS)"),
    ("void scal_kernel<float, float, 1, true, 6, 5, 5, 3>(cublasTransposeParams<float>, float const*, float*, "
     "float const*)", "cuBLAS", "scal (cuBLAS)"),
    # CUTLASS
    ("_ZN7cutlass7Kernel2I68cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_nn_align8EEvNT_6ParamsE",
     "CUTLASS", "gemm 32x32 (CUTLASS)"),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(cutlass_80_simt_sgemm_128x32_8x5_nn_align1::Params)",
     "CUTLASS", "gemm 128x32 (CUTLASS)"),
    ("cutlass_80_tensorop_s1688gemm_128x128_16x4_tn_align4", "CUTLASS", "gemm 128x128 (CUTLASS)"),
    ("cutlass3x_sm90_tensorop_s64x128x16gemm_f16_f16_f32_void_f16_128x128x64_1x1x1_0_tnn_align8_warpspecialized_"
     "cooperative_epi_tma", "CUTLASS", "gemm 128x128 (CUTLASS)"),
    ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GemmShape<64, 64, 32>>>"
     "(cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GemmShape<64, 64, 32>>::Params)", "CUTLASS", "gemm (CUTLASS)"),
    # ATen elementwise (H200 fixtures)
    ("_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_18GeluCUDAKernelImplERNS_18TensorIteratorBaseENS0_8GeluTypeEE"
     "NKUlvE0_clEvENKUlvE0_clEvEUlfE_St5arrayIPcLm2EEEEviT0_T1_", "ATen elementwise", "gelu (elementwise)"),
    ("_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_49_GLOBAL__N__d2ba64fb_16_TensorCompare_cu_71e06f4e19launch_"
     "clamp_scalarERNS_18TensorIteratorBaseEN3c106ScalarES6_NS0_6detail11ClampLimitsEENKUlvE_clEvENKUlvE5_clEvEUlfE_St5"
     "arrayIPcLm2EEEEviT0_T1_", "ATen elementwise", "clamp (elementwise)"),
    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_21CUDAFunctorOnSelf_addIiEESt5arrayIPcLm2EEEEviT0_T1_",
     "ATen elementwise", "add (elementwise)"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, "
     "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >(int, at::native::AUnaryFunctor<float, "
     "float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul>)",
     "ATen elementwise", "mul (elementwise)"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, "
     "at::native::FillFunctor<float>, std::array<char*, 1ul>)", "ATen elementwise", "fill (elementwise)"),
    ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda("
     "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}>("
     "at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
     "const::{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1}>(int, "
     "at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(int)#1})",
     "ATen elementwise", "copy (elementwise)"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::"
     "operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, "
     "at::native::silu_kernel(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul>)",
     "ATen elementwise", "silu (elementwise)"),
    ("void at::native::unrolled_elementwise_kernel<at::native::tanh_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::"
     "operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, "
     "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> "
     ">(int, at::native::tanh_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1})", "ATen elementwise",
     "tanh (elementwise)"),
    ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, "
     "float, float, at::native::binary_internal::DivFunctor<float> > >(at::TensorIteratorBase&, "
     "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float> > const&)::"
     "{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, "
     "at::native::binary_internal::DivFunctor<float> > >(at::TensorIteratorBase&)::{lambda(int)#1})",
     "ATen elementwise", "div (elementwise)"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::masked_fill_kernel("
     "at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda()#10}::operator()() const::"
     "{lambda(float, bool)#1}, std::array<char*, 3ul> >(int, at::native::(anonymous namespace)::masked_fill_kernel("
     "at::TensorIterator&, c10::Scalar const&)::{lambda(float, bool)#1}, std::array<char*, 3ul>)",
     "ATen elementwise", "masked_fill (elementwise)"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::where_kernel_impl("
     "at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#6}::operator()() const::{lambda(bool, float, "
     "float)#1}, std::array<char*, 4ul> >(int, at::native::(anonymous namespace)::where_kernel_impl(at::TensorIterator&)"
     "::{lambda(bool, float, float)#1}, std::array<char*, 4ul>)", "ATen elementwise", "where (elementwise)"),
    ("void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<at::native::index_kernel_impl<"
     "at::native::OpaqueType<4> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, "
     "char*, long)#1}>(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(int)#1}>(long, "
     "at::native::gpu_index_kernel<>::{lambda(int)#1})", "ATen elementwise", "index (elementwise)"),
    # ATen reduction
    ("_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_11sum_functorIfffEclERNS_14Tensor"
     "IteratorEEUlffE_EEjfLi4ELi4EEEEEvT1_", "ATen reduction", "sum (reduction)"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
     "unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
     "unsigned int, float, 4, 4>)", "ATen reduction", "mean (reduction)"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, "
     "long, 4, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4>)",
     "ATen reduction", "argmax (reduction)"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
     "at::native::MaxNanFunctor<float> >, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, "
     "at::native::func_wrapper_t<float, at::native::MaxNanFunctor<float> >, unsigned int, float, 4, 4>)",
     "ATen reduction", "max (reduction)"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::WelfordOps<float, float, int, "
     "thrust::pair<float, float> >, unsigned int, float, 2, 4> >(at::native::ReduceOp<float, at::native::WelfordOps<"
     "float, float, int, thrust::pair<float, float> >, unsigned int, float, 2, 4>)", "ATen reduction",
     "var_mean (reduction)"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::NormTwoOps<float, float, float>, "
     "unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::NormTwoOps<float, float, float>, unsigned int,"
     " float, 4, 4>)", "ATen reduction", "norm (reduction)"),
    # ATen other
    ("_ZN43_GLOBAL__N__b6de9c8c_10_SoftMax_cu_9f978f6320softmax_warp_forwardIfffLi8ELb0ELb0EEEvPT0_PKT_iiiPKbib",
     "ATen other", "softmax (ATen)"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
     "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)", "ATen other",
     "softmax (ATen)"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
     "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)", "ATen other",
     "log_softmax (ATen)"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float, false>(int, float, float const*, "
     "float const*, float const*, float*, float*, float*)", "ATen other", "layer_norm (ATen)"),
    ("void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, long, long, bool)",
     "ATen other", "gather (ATen)"),
    ("_ZN2at6native43_GLOBAL__N__50f1b6c4_10_Dropout_cu_0e96ed3824fused_dropout_kernel_vecIffjLi1ELi4EbEEvNS_4cuda6detail"
     "10TensorInfoIKT_T1_EENS5_IS6_S8_EENS5_IT4_S8_EES8_T0_NS_15PhiloxCudaStateE", "ATen other", "dropout (ATen)"),
    ("void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, true>("
     "at::cuda::detail::TensorInfo<float, unsigned int>)", "ATen other", "index_select (ATen)"),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<4u>, "
     "unsigned int, 2, 128, 1>(at::native::(anonymous namespace)::OpaqueType<4u>*)", "ATen other", "cat (ATen)"),
    ("void at::native::triu_tril_kernel<float, int, false, 4, true>(at::cuda::detail::TensorInfo<float, int>)",
     "ATen other", "triu/tril (ATen)"),
    ("void at::native::(anonymous namespace)::RowwiseMomentsCUDAKernel<float, float>(long, float, float const*, float*, "
     "float*)", "ATen other", "layer_norm (ATen)"),
    ("void at::native::_scatter_gather_elementwise_kernel<128, 8, at::native::_cuda_scatter_gather_internal_kernel<true, "
     "float>::operator()<at::native::ReduceAdd>(at::TensorIterator&, long, long, long, at::native::ReduceAdd const&)::"
     "{lambda(int)#1}>(int, at::native::_cuda_scatter_gather_internal_kernel<true, float>::{lambda(int)#1})",
     "ATen other", "scatter/gather (ATen)"),
    ("void at::native::mbtopk::radixFindKthValues<float, unsigned int, unsigned int, 2>(at::cuda::detail::TensorInfo<"
     "float const, unsigned int>, unsigned int, unsigned int*, unsigned int)", "ATen other", "topk (ATen)"),
    ("void at::native::(anonymous namespace)::upsample_bilinear2d_out_frame<float, float>(int, float, float, bool)",
     "ATen other", "upsample (ATen)"),
    ("void at::native::im2col_kernel<float>(long, float const*, long, long, long, long, long, long, long, float*)",
     "ATen other", "im2col (ATen)"),
    # attention
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::half_t, "
     "Flash_kernel_traits<64, 128, 128, 4, cutlass::half_t> >, false, true, false, false, true, true, false, false>("
     "pytorch_flash::Flash_fwd_params)", "attention", "flash fwd (attention)"),
    ("void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
     "cutlass::bfloat16_t>, false, true, false, false, true, false, false, false>(pytorch_flash::Flash_fwd_params)",
     "attention", "flash fwd split-KV (attention)"),
    ("void pytorch_flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
     "cutlass::bfloat16_t>, 4, 3, false>(pytorch_flash::Flash_fwd_params)", "attention",
     "flash split-KV combine (attention)"),
    ("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64, 128, 128, 8, 2, 4, 2, "
     "false, false, cutlass::half_t>, false, false, false, false, false, false, false>(pytorch_flash::Flash_bwd_params)",
     "attention", "flash bwd (attention)"),
    ("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm80, true, "
     "64, 64, 64, true, true>::Params)", "attention", "mem-efficient fwd (attention)"),
    ("fmha_cutlassB_f16_aligned_64x64_k64_sm80(PyTorchMemEffAttentionBackward::AttentionBackwardKernel<cutlass::arch::Sm80,"
     " cutlass::half_t, true, false, true, 64, 64, 64, false>::Params)", "attention", "mem-efficient bwd (attention)"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0", "attention",
     "cudnn sdpa fwd (attention)"),
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<"
     "2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >> > > >"
     "(flash::FlashAttnFwdSm90<>::Params)", "attention", "flash fwd (attention)"),
    ("void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, 2u, 4u, 8u, 16u, 1u, 8u, "
     "__half, __half, __half, int>(__half*, flashinfer::paged_kv_t<__half, int>, float*, float)", "attention",
     "flashinfer decode (attention)"),
    # Triton (inductor kernels keep their Python names)
    ("triton_poi_fused_add_mul_0", "Triton", "add_mul (Triton)"),
    ("triton_red_fused__softmax_1", "Triton", "softmax (Triton)"),
    ("triton_per_fused_native_layer_norm_2", "Triton", "native_layer_norm (Triton)"),
    ("triton_poi_fused_0", "Triton", "fused (Triton)"),
    ("triton_tem_fused_mm_3", "Triton", "mm (Triton)"),
    # NCCL
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "NCCL", "all_reduce (NCCL)"),
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "NCCL", "reduce_scatter (NCCL)"),
    ("ncclDevKernel_AllGather_RING_LL", "NCCL", "all_gather (NCCL)"),
    ("ncclDevKernel_SendRecv", "NCCL", "send_recv (NCCL)"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float", "NCCL", "all_reduce (NCCL)"),
    # cuDNN
    ("sm80_xmma_fprop_implicit_gemm_indexed_wo_smem_f16f16_f16f32_f32_nhwckrsc_nchw_tilesize64x32x64_stage5_warpsize2x2x1"
     "_g1_tensor16x8x16_kernel", "cuDNN", "conv fwd 64x32 (cuDNN)"),
    ("sm86_xmma_dgrad_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4_warpsize2x2x1_g1_tensor16x8x16"
     "_kernel", "cuDNN", "conv dgrad 128x128 (cuDNN)"),
    # H200 recordings (data/recordings/h200/resnet18, cnn)
    ("sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x192x32_warpgroupsize1x1x1_g1_execute_"
     "segment_k_off_kernel__5x_cudnn", "cuDNN", "conv fwd 64x192 (cuDNN)"),
    ("void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int, float const*,"
     " int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, float const*, "
     "float const*, bool, int, int)", "cuDNN", "conv fwd (cuDNN)"),
    ("void cask_plugin__5x_cudnn::xmma__5x_cudnn::init_device_workspace_kernel<xmma__5x_cudnn::implicit_gemm::fprop::"
     "Kernel_traits<xmma__5x_cudnn::Ampere_hmma_tf32_traits<unsigned int, float>, xmma__5x_cudnn::Cta_tile<"
     "xmma__5x_cudnn::Ampere, 128, 32, 16, 2, 2, 1, 1>, true, 1, false> >(xmma__5x_cudnn::implicit_gemm::fprop::Params)",
     "cuDNN", "workspace init (cuDNN)"),
    ("void cudnn::engines_precompiled::nhwcToNchwKernel<float, float, float, true, false, (cudnnKernelDataType_t)0>("
     "cudnn::engines_precompiled::nhwc2nchw_params_t<float>, float const*, float*)", "cuDNN", "nhwc→nchw (cuDNN)"),
    ("void at::native::(anonymous namespace)::max_pool_forward_nchw<float, int>(int, float const*, long, long, long, "
     "int, int, int, int, int, int, int, int, int, int, float*, long*)", "ATen other", "max_pool (ATen)"),
    ("void cudnn::ops::nchwToNhwcKernel<__half, __half, float, false, true, (cudnnKernelDataType_t)0>("
     "cudnn::ops::nchw2nhwc_params_t<float>, __half const*, __half*)", "cuDNN", "nchw→nhwc (cuDNN)"),
    ("void cudnn::bn_fw_inf_1C11_kernel_NCHW<float, float, true, 1>(float, float, cudnnTensorStruct, float const*)",
     "cuDNN", "batch_norm (cuDNN)"),
    # other (candle's extern "C" kernels, hand-written kernels)
    ("ulog_bf16", "other", "ulog_bf16 (other)"),
    ("badd_bf16", "other", "badd_bf16 (other)"),
    ("_Z9my_kernelPfi", "other", "my_kernel (other)"),
]


@pytest.mark.parametrize(("name", "family", "short"), REAL_NAMES, ids=[s for _, _, s in REAL_NAMES])
def test_family_and_short_name(name: str, family: str, short: str) -> None:
    if name.startswith("_Z") and not demangler_available():
        pytest.skip("needs __cxa_demangle")
    info = describe_kernel(name)
    assert (info.family, info.short_name) == (family, short)
    assert classify_kernel(name) == family
    assert short_kernel_name(name) == short


def test_families_are_ordered_and_cover_every_rule() -> None:
    assert FAMILIES[0] == "cuBLAS" and FAMILIES[-1] == "other"
    assert len(set(FAMILIES)) == len(FAMILIES) == 10
    assert {family for _, family, _ in REAL_NAMES} == set(FAMILIES)


@needs_demangler
def test_demangle_real_names() -> None:
    assert demangle("_Z9my_kernelPfi") == "my_kernel(float*, int)"
    assert demangle(
        "_ZN7cutlass7Kernel2I68cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_nn_align8EEvNT_6ParamsE"
    ) == ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_nn_align8>"
          "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_nn_align8::Params)")


def test_demangle_leaves_other_names_alone() -> None:
    for name in ("ampere_sgemm_128x64_tn", "triton_poi_fused_add_0", "", "_Zgarbage!!", "_Z"):
        assert demangle(name) == name


def test_demangle_falls_back_without_a_cpp_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    import graphlab.graph.demangle as module

    monkeypatch.setattr(module, "_loaded", True)
    monkeypatch.setattr(module, "_demangler", None)
    module.demangle.cache_clear()
    try:
        assert module.demangle("_Z9my_kernelPfi") == "_Z9my_kernelPfi"
        assert not module.demangler_available()
    finally:
        module.demangle.cache_clear()


def test_function_path_strips_return_type_templates_and_arguments() -> None:
    assert function_path("std::enable_if<true, void>::type internal::gemvx::kernel<int, float>(Params)") == (
        "internal::gemvx::kernel"
    )
    assert function_path("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*)") == (
        "at::native::{anon}::cunn_SoftMaxForward"
    )


def test_long_unknown_names_are_shortened() -> None:
    name = "a_very_long_handwritten_kernel_name_that_goes_on_and_on_forever"
    short = describe_kernel(name).short_name
    assert short.endswith("(other)") and len(short) < len(name)


def test_every_h200_fixture_kernel_has_a_family_and_a_short_name() -> None:
    """Real PyTorch/cuBLAS/cuDNN kernels from the H200 fixtures never fall through to 'other', and
    their short names stay short enough for a graph drawing."""
    import re

    from conftest import FIXTURES

    names: set[str] = set()
    for path in (FIXTURES / "h200").glob("*/*__verbose.dot"):
        names |= set(re.findall(r"\| (\S+?)\\<\\<\\<", path.read_text()))
    if not names:
        pytest.skip("H200 fixtures are not there")
    for name in names:
        info = describe_kernel(name)
        assert info.family != "other", name
        assert len(info.short_name) <= 40 and "<" not in info.short_name, (name, info.short_name)
