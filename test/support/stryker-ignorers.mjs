// Stryker ignorer for the mutation run (stryker.config.mjs): message texts and log lines.
// A mutant that only changes the words of an error message or a log line is equivalent for
// every behaviour a test should pin (codes, statuses and data are still mutated).
import { declareValuePlugin, PluginKind } from '@stryker-mutator/api/plugin';

/** Calls whose string arguments are message text: error constructors and log calls. */
const MESSAGE_CALLEES = new Set(['DeviceRiskError', 'BadRequestError', 'Error', 'TypeError']);
const LOG_OBJECTS = new Set(['console']);
/** Helpers whose argument at this index is only put into their error messages. */
const LABEL_ARGUMENT = { fromStore: 1, requireSecureUrl: 1, fail: 0, takeLease: 3 };

function isText(path) {
  return path.isStringLiteral() || path.isTemplateLiteral();
}

export const strykerPlugins = [
  declareValuePlugin(PluginKind.Ignore, 'message-texts', {
    shouldIgnore(path) {
      // console.log(...), console.error(...): the whole statement.
      if (path.isExpressionStatement()) {
        const expression = path.get('expression');
        if (expression.isCallExpression()) {
          const callee = expression.get('callee');
          if (
            callee.isMemberExpression() &&
            callee.get('object').isIdentifier() &&
            LOG_OBJECTS.has(callee.node.object.name)
          )
            return 'a log line';
        }
      }
      if (!isText(path)) return undefined;
      const parent = path.parentPath;
      // new DeviceRiskError(code, `message`, …): the message argument only (index 1), the code stays.
      if ((parent?.isNewExpression() || parent?.isCallExpression()) && parent.get('callee').isIdentifier()) {
        const name = parent.node.callee.name;
        const index = parent.node.arguments.indexOf(path.node);
        if (name === 'DeviceRiskError' && index === 1) return 'an error message';
        if (name === 'BadRequestError' && index === 1) return 'an error message';
        if (MESSAGE_CALLEES.has(name) && name !== 'DeviceRiskError' && name !== 'BadRequestError' && index === 0)
          return 'an error message';
        // add(id, status, `message`, `fix`): the words of a doctor's finding (its id and status stay).
        if (name === 'add' && (index === 2 || index === 3)) return "a finding's words";
        // refused(status, code, `message`, `why`): a refused callback's answer and report texts.
        if (name === 'refused' && (index === 2 || index === 3)) return 'an answer message';
        // refuse(status, code, `message`): the endpoint's answer text.
        if (name === 'refuse' && index === 2) return 'an answer message';
        // fromStore(operation, 'token read'), requireSecureUrl(url, 'tokenUrl'), fail('lacks …'),
        // takeLease(store, key, ms, 'callback lease', now): words that only go into a message.
        if (LABEL_ARGUMENT[name] === index) return 'a label used only in messages';
        // trace(`message`) in the emulated scripts is compared by the conformance table, not here.
      }
      // A message ending in a `+`-joined string or template inside such a call.
      if (parent?.isBinaryExpression({ operator: '+' }) || parent?.isTemplateLiteral())
        return shouldIgnoreNested(parent);
      return undefined;
    },
  }),
];

function shouldIgnoreNested(path) {
  let current = path;
  while (
    current.parentPath &&
    (current.parentPath.isBinaryExpression({ operator: '+' }) || current.parentPath.isTemplateLiteral())
  )
    current = current.parentPath;
  const parent = current.parentPath;
  if (!parent || !(parent.isNewExpression() || parent.isCallExpression()) || !parent.get('callee').isIdentifier())
    return undefined;
  const index = parent.node.arguments.indexOf(current.node);
  const name = parent.node.callee.name;
  if ((name === 'DeviceRiskError' || name === 'BadRequestError') && index === 1) return 'an error message';
  if (name === 'refuse' && index === 2) return 'an answer message';
  return undefined;
}
