/**
 * The agent's code as one ES module, bundled by esbuild from `bin/tps-agent.ts`. Packages
 * with native code (and pino-pretty, which the logger loads by name when asked for
 * readable lines) stay outside, shipped in the release's node_modules
 * (native-modules.ts). A bundle that reaches the relay's code or packages fails the build.
 */
import path from 'node:path';
import { build, type Plugin } from 'esbuild';

/** Loaded at run time from the release's node_modules, not bundled. */
export const EXTERNAL_PACKAGES = ['@serialport/bindings-cpp', 'pino-pretty'];

/** Must never reach the agent's bundle: the relay's code and the relay's packages. */
const RELAY_ONLY = [
  /^cloud\//,
  /^console\//,
  /^client\//,
  /node_modules\/(fastify|@fastify\/[^/]+|pg|pg-[^/]+|aedes|aedes-[^/]+|prom-client|undici|ulid|ipaddr\.js|@lydell\/node-pty|@peculiar\/[^/]+|asn1js|tsyringe|reflect-metadata)\//,
];

/**
 * mqtt.js's WebSocket and SOCKS transports, left out: the agent gives mqtt.js its own
 * stream (broker-socket.ts) for the mqtt:// and mqtts:// its config accepts, so mqtt.js
 * never loads them; bundled, `ws`, `socks` and their dependencies were ≈ 160 KB of source
 * kept in memory. A module that throws stands in, should a transport ever be asked for.
 */
const LEFT_OUT_OF_MQTT = /^(ws|socks)$/;

const leaveOutMqttTransports: Plugin = {
  name: 'leave-out-mqtt-transports',
  setup(build) {
    build.onResolve({ filter: LEFT_OUT_OF_MQTT }, (args) =>
      /node_modules\/mqtt\//.test(args.importer)
        ? { path: args.path, namespace: 'left-out-of-the-agent' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'left-out-of-the-agent' }, (args) => ({
      contents: `throw new Error(${JSON.stringify(`${args.path} is not in the agent's bundle: the agent connects with mqtt:// or mqtts://`)});`,
      loader: 'js',
    }));
  },
};

export class BundleRefused extends Error {}

export interface BundleResult {
  /** Every source file in the bundle, relative to the project root. */
  inputs: string[];
}

/**
 * Bundles `entry` (the agent's, unless a test gives another) into `outfile`; throws
 * BundleRefused listing every relay file that got in.
 */
export async function bundleAgent(
  root: string,
  outfile: string,
  entry = path.join(root, 'bin/tps-agent.ts'),
): Promise<BundleResult> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    external: EXTERNAL_PACKAGES,
    plugins: [leaveOutMqttTransports],
    metafile: true,
    minifySyntax: true,
    minifyWhitespace: true,
    keepNames: true,
    legalComments: 'none',
    logLevel: 'warning',
    banner: {
      // The bundled CommonJS packages (mqtt, pino…) call require() for Node's modules.
      // The entry's hashbang stays first.
      js: [
        "import { createRequire as __tpsCreateRequire } from 'node:module';",
        'const require = __tpsCreateRequire(import.meta.url);',
      ].join('\n'),
    },
  });
  const inputs = Object.keys(result.metafile.inputs);
  const refused = inputs.filter((input) => RELAY_ONLY.some((pattern) => pattern.test(input)));
  if (refused.length > 0) {
    throw new BundleRefused(
      `the agent's bundle reaches relay code or packages:\n  ${refused.join('\n  ')}`,
    );
  }
  return { inputs };
}
