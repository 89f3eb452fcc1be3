# The one-way dependency order of ../shared/DESIGN.md: the swiftlet folders
# each folder's library may use. swiftlet_library() refuses a DEPS entry that
# is not on its folder's line, links every folder dependency PRIVATE, and
# exposes only the folder's own include directory; so a header that points
# the wrong way fails to compile (scripts/check_layering.py proves it per
# folder, and checks this table against DESIGN.md).
set(SWIFTLET_LAYER_cli       server loadgen gateway probe plan perf engine model text gguf core)
set(SWIFTLET_LAYER_server    translate web engine text api http core)
set(SWIFTLET_LAYER_translate engine text api core)
set(SWIFTLET_LAYER_web       core)
set(SWIFTLET_LAYER_loadgen   api http core)
set(SWIFTLET_LAYER_gateway   api http core)
set(SWIFTLET_LAYER_probe     api http core)
set(SWIFTLET_LAYER_plan      perf gguf core)
set(SWIFTLET_LAYER_perf      engine model kernels core)
set(SWIFTLET_LAYER_engine    model kv text core)
set(SWIFTLET_LAYER_model     kernels kv gguf core)
set(SWIFTLET_LAYER_kv        kernels core)
set(SWIFTLET_LAYER_text      gguf core)
set(SWIFTLET_LAYER_kernels   core)
set(SWIFTLET_LAYER_http      core)
set(SWIFTLET_LAYER_api       core)
set(SWIFTLET_LAYER_gguf      core)
set(SWIFTLET_LAYER_core      "")
