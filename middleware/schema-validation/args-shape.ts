/**
 * The shape checks raw args get before any schema sees them: an object, acyclic, not too deep.
 * @module
 */

/** What is wrong with the shape of raw args, or `undefined` when nothing is. */
export function argsShapeProblem(args: unknown, maxDepth: number): string | undefined {
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return `args must be a JSON object, got ${describeType(args)}`;
  }
  for (const key in args) {
    const value = (args as Record<string, unknown>)[key];
    if (typeof value === 'object' && value !== null) return nestingProblem(args, maxDepth);
  }
  return undefined;
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}

// Walks iteratively, so hostile nesting cannot overflow the call stack before it is rejected.
function nestingProblem(root: object, maxDepth: number): string | undefined {
  const stack: Array<{ node: object; depth: number; children: unknown[]; next: number }> = [];
  const onPath = new Set<object>();
  const enter = (node: object, depth: number) => {
    onPath.add(node);
    stack.push({ node, depth, children: Object.values(node), next: 0 });
  };
  enter(root, 1);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1] as (typeof stack)[number];
    if (frame.next === frame.children.length) {
      onPath.delete(frame.node);
      stack.pop();
      continue;
    }
    const child = frame.children[frame.next++];
    if (typeof child !== 'object' || child === null) continue;
    if (onPath.has(child)) return 'args contain a cycle (an object that contains itself)';
    if (frame.depth + 1 > maxDepth) return `args nest deeper than ${maxDepth} levels`;
    enter(child, frame.depth + 1);
  }
  return undefined;
}
