/* kernels.h: the ambiguity benchmark's kernels, K(id, device name), for both targets. A name's
 * `_sleep_<N>us` is its duration: the doubles read it from the name, amb_cuda.cu spins that long. */
#define AMB_KERNELS(K)                                                         \
    K(lh_a, "amb_lh_a_sleep_1000us")                                           \
    K(lh_b, "amb_lh_b_sleep_1000us")                                           \
    K(lf_a, "amb_lf_a_sleep_1000us")                                           \
    K(lf_b, "amb_lf_b_sleep_1000us")                                           \
    K(ld_long, "amb_ld_long_sleep_5000us")                                     \
    K(ld_a, "amb_ld_a_sleep_500us")                                            \
    K(ld_b, "amb_ld_b_sleep_1000us")                                           \
    K(dp_p, "amb_dp_p_sleep_2000us")                                           \
    K(dp_c, "amb_dp_c_sleep_1000us")                                           \
    K(ov_p, "amb_ov_p_sleep_2000us")                                           \
    K(ov_c, "amb_ov_c_sleep_1000us")                                           \
    K(sc_c, "amb_sc_c_sleep_500us")                                            \
    K(bc_c, "amb_bc_c_sleep_500us")                                            \
    K(ms_p, "amb_ms_p_sleep_2000us")                                           \
    K(ms_c, "amb_ms_c_sleep_500us")                                            \
    K(ne_p, "amb_ne_p_sleep_2000us")                                           \
    K(ne_c, "amb_ne_c_sleep_500us")                                            \
    K(rp_k, "amb_rp_k_sleep_200us")                                            \
    K(st_long, "amb_st_long_sleep_3000us")                                     \
    K(st_c, "amb_st_c_sleep_500us")                                            \
    K(st_d, "amb_st_d_sleep_500us")                                            \
    K(bz_hog, "amb_bz_hog_sleep_5000us")                                       \
    K(bz_victim, "amb_bz_victim_sleep_500us")                                  \
    K(ly_long, "amb_ly_long_sleep_2000us")                                     \
    K(ly_c, "amb_ly_c_sleep_500us")
