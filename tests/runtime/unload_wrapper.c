/* An allocation wrapper whose frame size is FRAME bytes, in assembly so that both builds
 * (tests/runtime/CMakeLists.txt: 64 KiB and 8 bytes) have the same code layout: loaded one
 * after the other with dlopen, its call to malloc returns to the same address with a
 * different unwind rule there (tests/test_runtime_unload.py). */
#define STR2(x) #x
#define STR(x) STR2(x)
__asm__(".text\n"
        ".globl unload_wrap\n"
        ".type unload_wrap, @function\n"
        "unload_wrap:\n"
        ".cfi_startproc\n"
        ".byte 0x48, 0x81, 0xec\n" /* sub $FRAME, %rsp with a 32-bit immediate in either build */
        ".long " STR(FRAME) "\n"
        ".cfi_def_cfa_offset " STR(FRAME) "+8\n"
        "call malloc@PLT\n"
        ".byte 0x48, 0x81, 0xc4\n" /* add $FRAME, %rsp */
        ".long " STR(FRAME) "\n"
        ".cfi_def_cfa_offset 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size unload_wrap, .-unload_wrap\n");
