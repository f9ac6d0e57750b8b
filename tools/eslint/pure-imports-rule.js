// ESLint rule: a pure folder (core/, conf/) may import only its own pure siblings and an explicit list of
// side-effect-free packages. Everything else (node:*, builtins, runtime/, sim/, any other package) is refused,
// because a decision that touches I/O can no longer be replayed by the simulator.
import { builtinModules } from 'node:module';
import path from 'node:path';

const builtins = new Set(builtinModules);

/** @type {import('eslint').Rule.RuleModule} */
export const pureImportsRule = {
  meta: {
    type: 'problem',
    docs: { description: 'Keep pure folders free of I/O, side effects and driver code' },
    schema: [
      {
        type: 'object',
        properties: {
          root: { type: 'string' },
          forbiddenFolders: { type: 'array', items: { type: 'string' } },
          allowedPackages: { type: 'array', items: { type: 'string' } },
        },
        additionalProperties: false,
      },
    ],
    messages: {
      builtin: "'{{source}}' is a Node.js module with side effects; pure code takes such things as inputs.",
      folder: "'{{source}}' reaches into {{folder}}/, which pure code must not import.",
      pkg: "'{{source}}' is not on the list of side-effect-free packages this folder may import ({{allowed}}).",
      dynamic: 'Dynamic import() is asynchronous and loads code at run time; pure code imports statically.',
    },
  },
  create(context) {
    const options = context.options[0] ?? {};
    const root = options.root ?? process.cwd();
    const forbidden = options.forbiddenFolders ?? [];
    const allowed = options.allowedPackages ?? [];
    const filename = context.filename;

    function check(node, source) {
      if (typeof source !== 'string') return;
      if (source.startsWith('.') || source.startsWith('/')) {
        const target = path.relative(root, path.resolve(path.dirname(filename), source));
        const folder = target.split(path.sep)[0];
        if (forbidden.includes(folder))
          context.report({ node, messageId: 'folder', data: { source, folder } });
        return;
      }
      const bare = source.startsWith('node:') ? source.slice(5) : source;
      if (source.startsWith('node:') || builtins.has(bare.split('/')[0])) {
        context.report({ node, messageId: 'builtin', data: { source } });
        return;
      }
      const pkg = source.startsWith('@') ? source.split('/').slice(0, 2).join('/') : source.split('/')[0];
      if (!allowed.includes(pkg)) {
        context.report({ node, messageId: 'pkg', data: { source, allowed: allowed.join(', ') || 'none' } });
      }
    }

    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => context.report({ node, messageId: 'dynamic' }),
      'CallExpression[callee.name="require"]': (node) => check(node, node.arguments[0]?.value),
    };
  },
};
