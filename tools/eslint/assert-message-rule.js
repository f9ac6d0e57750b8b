// ESLint rule: `assert(value)` and `assert.ok(value)` name what they check. Without a message, node 20 builds one by
// reading the calling file from disk and parsing it from the call's column; tsx compiles a file to one line, so the
// column lies deep in the file and the parse takes minutes (nodejs/node#52962, privatenumber/tsx#548). A property
// test that failed such an assertion hung its file until the runner's limit, hiding every other failure in it.

/** @type {import('eslint').Rule.RuleModule} */
export const assertMessageRule = {
  meta: {
    type: 'problem',
    docs: { description: 'Give assert() and assert.ok() a message' },
    schema: [],
    messages: {
      missing:
        'Pass a message (what is checked): without one, node parses the tsx-compiled file to make one, which can take minutes.',
    },
  },
  create(context) {
    return {
      CallExpression(node) {
        const callee = node.callee;
        const isAssert = callee.type === 'Identifier' && callee.name === 'assert';
        const isOk =
          callee.type === 'MemberExpression' &&
          callee.object.type === 'Identifier' &&
          callee.object.name === 'assert' &&
          callee.property.type === 'Identifier' &&
          callee.property.name === 'ok';
        if ((isAssert || isOk) && node.arguments.length < 2) context.report({ node, messageId: 'missing' });
      },
    };
  },
};
