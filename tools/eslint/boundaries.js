// The house rule "core/ and conf/ are pure", as ESLint configuration. Shared by eslint.config.js and by the test
// that proves the rule fires on a fixture that breaks it.
import { pureImportsRule } from './pure-imports-rule.js';

const root = new URL('../..', import.meta.url).pathname.replace(/\/$/, '');
const driverFolders = ['runtime', 'sim', 'conformance', 'bench', 'scripts', 'test'];

const impureGlobals = [
  { name: 'Date', message: 'Time is an input (now); pure code never reads the clock.' },
  { name: 'setTimeout', message: 'Timers are effects; return a timer effect instead.' },
  { name: 'setInterval', message: 'Timers are effects; return a timer effect instead.' },
  { name: 'setImmediate', message: 'Timers are effects; return a timer effect instead.' },
  { name: 'queueMicrotask', message: 'Scheduling is the driver’s job.' },
  { name: 'performance', message: 'Time is an input (now); pure code never reads the clock.' },
  { name: 'process', message: 'Environment and process state are inputs to pure code.' },
  { name: 'require', message: 'Pure code uses static ESM imports only.' },
  { name: 'fetch', message: 'Network access is the driver’s job.' },
  { name: 'crypto', message: 'Randomness is an input (Rng); pure code never draws its own.' },
];

const impureProperties = [
  {
    object: 'Math',
    property: 'random',
    message: 'Randomness is an input (Rng); pure code never draws its own.',
  },
  { object: 'Date', property: 'now', message: 'Time is an input (now); pure code never reads the clock.' },
];

const synchronousOnly = [
  { selector: 'FunctionDeclaration[async=true]', message: 'core/ is synchronous: no async functions.' },
  { selector: 'FunctionExpression[async=true]', message: 'core/ is synchronous: no async functions.' },
  { selector: 'ArrowFunctionExpression[async=true]', message: 'core/ is synchronous: no async functions.' },
  { selector: 'AwaitExpression', message: 'core/ is synchronous: no await.' },
  { selector: 'Identifier[name="Promise"]', message: 'core/ is synchronous: no Promise.' },
];

const plugin = { rules: { 'pure-imports': pureImportsRule } };

function pureFolder(folder, { allowedPackages, forbiddenFolders, synchronous }) {
  return {
    files: [`${folder}/**/*.ts`],
    ignores: ['**/*.test.ts'],
    plugins: { svc: plugin },
    rules: {
      'svc/pure-imports': ['error', { root, forbiddenFolders, allowedPackages }],
      'no-restricted-globals': ['error', ...impureGlobals],
      'no-restricted-properties': ['error', ...impureProperties],
      'no-restricted-syntax': synchronous ? ['error', ...synchronousOnly] : 'off',
    },
  };
}

/** Flat-config entries that enforce purity. Tests of these folders may use node: freely; the code may not. */
export const boundaryConfigs = [
  pureFolder('core', {
    allowedPackages: [],
    forbiddenFolders: [...driverFolders, 'conf'],
    synchronous: true,
  }),
  // conf/ may read core/release (the history table) and parse YAML; it never touches files or the environment.
  pureFolder('conf', { allowedPackages: ['yaml'], forbiddenFolders: driverFolders, synchronous: true }),
];
