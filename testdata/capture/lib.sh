# Shared by capture.sh and capture_hf.sh; source it from the repository root.

# nsys_setup DIR puts the nsys 2025.3.1 CLI that ships inside Nsight Compute under DIR, with
# the importer where nsys looks for it (../shared/docs/capturing.md), and sets NSYS and the
# environment of the captures (libdw/libelf from .gpu/lib; NVLink multicast off).
nsys_setup() {
  local h=/opt/nvidia/nsight-compute/2025.3.1/host
  rm -rf "$1" && mkdir -p "$1" && cp -as $h/target-linux-x64 "$1/target-linux-x64"
  ln -sfn $h/linux-desktop-glibc_2_11_3-x64 "$1/host-linux-x64"
  export LD_LIBRARY_PATH=$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
  export PYTHONUNBUFFERED=1
  NSYS=$1/target-linux-x64/nsys
}

# export_capture CFG exports $TMP/CFG.nsys-rep to SQLite and gzips it into
# $OUT/CFG.sqlite.gz, logging to $LOG; it returns non-zero when the export failed.
export_capture() {
  local cfg=$1 rc
  grep -v '^{"workload"' "$TMP/$cfg.out" | grep -iE 'warn|error|generated|captur' | head -20 >> "$LOG"
  timeout 200 $NSYS export --type sqlite -f true -o "$TMP/$cfg.sqlite" "$TMP/$cfg.nsys-rep" > "$TMP/$cfg.export" 2>&1
  rc=$?
  if [ $rc -ne 0 ] || [ ! -f "$TMP/$cfg.sqlite" ]; then
    echo "EXPORT FAILED rc=$rc" >> "$LOG"; tail -20 "$TMP/$cfg.export" >> "$LOG"; return 1
  fi
  gzip -9 -n -c "$TMP/$cfg.sqlite" > "$OUT/$cfg.sqlite.gz"
  echo "sqlite bytes=$(stat -c %s "$TMP/$cfg.sqlite") gz bytes=$(stat -c %s "$OUT/$cfg.sqlite.gz")" >> "$LOG"
}
