// The read order against a model array: after any sequence of adds, touches, removals and
// clears the list walks newest first exactly as the model says; and a walk that removes or
// touches streams while it stands on them (as a flush does, when a read ends a stream) still
// visits every stream that was listed when it started and stayed listed.
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { RecentStreams } from './recent-streams.js';
import type { RecentNode } from './recent-streams.js';

class Node implements RecentNode<Node> {
  newer: Node | null = null;
  older: Node | null = null;
  listed = false;
  constructor(readonly id: number) {}
}

function walk(list: RecentStreams<Node>): number[] {
  const ids: number[] = [];
  for (let n = list.first; n !== null; n = list.next(n)) ids.push(n.id);
  return ids;
}

type Op = { kind: 'add' } | { kind: 'touch'; i: number } | { kind: 'remove'; i: number } | { kind: 'clear' };

const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'add' as const }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant('touch' as const), i: fc.nat(20) }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant('remove' as const), i: fc.nat(20) }), weight: 2 },
  { arbitrary: fc.constant({ kind: 'clear' as const }), weight: 1 },
);

test('walks newest first, as a model array does', () => {
  fc.assert(
    fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
      const list = new RecentStreams<Node>();
      const nodes: Node[] = [];
      let model: number[] = [];
      for (const o of ops) {
        switch (o.kind) {
          case 'add': {
            const n = new Node(nodes.length);
            nodes.push(n);
            list.add(n);
            model.unshift(n.id);
            break;
          }
          case 'touch': {
            const n = nodes[o.i % Math.max(1, nodes.length)];
            if (n === undefined) break;
            list.touch(n);
            if (model.includes(n.id)) model = [n.id, ...model.filter((id) => id !== n.id)];
            break;
          }
          case 'remove': {
            const n = nodes[o.i % Math.max(1, nodes.length)];
            if (n === undefined) break;
            list.remove(n);
            model = model.filter((id) => id !== n.id);
            break;
          }
          case 'clear':
            list.clear();
            model = [];
            break;
        }
        expect(walk(list)).toEqual(model);
        for (const n of nodes) expect(n.listed).toBe(model.includes(n.id));
      }
    }),
  );
});

test('a walk that touches or removes the stream it stands on still visits every stream left listed', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 12 }), fc.array(fc.constantFrom('touch', 'remove', 'none'), { minLength: 12, maxLength: 12 }), (count, actions) => {
      const list = new RecentStreams<Node>();
      const nodes = Array.from({ length: count }, (_, id) => new Node(id));
      for (const n of nodes) list.add(n);
      const before = walk(list);
      const visited: number[] = [];
      for (let n = list.first; n !== null; ) {
        const next = list.next(n);
        visited.push(n.id);
        const action = actions[n.id];
        if (action === 'touch') list.touch(n);
        if (action === 'remove') list.remove(n);
        n = next;
      }
      expect(visited).toEqual(before);
      const touched = before.filter((id) => actions[id] === 'touch');
      const untouched = before.filter((id) => actions[id] === 'none');
      expect(walk(list)).toEqual([...touched.reverse(), ...untouched]);
    }),
  );
});

test('a walk standing on a stream removed from under it goes on to what followed it', () => {
  const list = new RecentStreams<Node>();
  const [a, b, c] = [new Node(0), new Node(1), new Node(2)];
  list.add(c);
  list.add(b);
  list.add(a); // a, b, c
  const seen: number[] = [];
  for (let n = list.first; n !== null; n = list.next(n)) {
    seen.push(n.id);
    if (n === a) list.remove(b); // b goes while the walk has not reached it yet
  }
  expect(seen).toEqual([0, 2]);
  list.remove(a);
  expect(list.next(a)).toBe(c);
  expect(walk(list)).toEqual([2]);
});
