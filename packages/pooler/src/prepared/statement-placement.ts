// Whether the attached backend has a pooler statement when the message being routed runs, and
// preparing it there when it does not (StatementRouter extends this class, which extends
// BackendAnswers): its BackendStatements are touched or added to, the statements they evict are
// closed, and an unsure one (its Parse or Close may have been skipped) is closed and prepared again.
import { BackendAnswers } from './backend-answers.js';
import type { BackendStatements } from './statement-cache.js';
import type { ClientStatement } from './statement-router.js';
import { targetMessage } from './wire-names.js';
import { MessageType } from '@quicpool/wire';

export abstract class StatementPlacement extends BackendAnswers {
  protected cache: BackendStatements | null = null;
  /** The Sync group of the last message about a statement, while its outcome may be unknown. */
  protected readonly lastGroup = new Map<string, number>();

  /** Prepares a client statement on the backend if it is not there yet (answer swallowed). */
  protected ensure(stmt: ClientStatement, quiet = false): void {
    const cache = this.cache;
    if (this.skipping || cache === null) return;
    const state = this.stateOf(stmt.pooler);
    if (state === 'present') {
      cache.touch(stmt.pooler);
      return;
    }
    this.closeEvicted(cache.add(stmt.pooler));
    // Unsure: it may exist (a skipped Close) or not (a skipped Parse): close, then prepare.
    if (state === 'unsure') this.injectClose(stmt.pooler);
    this.touched(stmt.pooler);
    this.sink.toBackend(stmt.parse);
    this.push({ k: 'injectedParse', name: stmt.pooler, quiet });
  }

  /**
   * Whether a statement exists on the backend when the message being routed is run. The cache is
   * optimistic within a Sync group (if an earlier message fails, the backend skips this one too),
   * but a message of an earlier group whose Sync is not answered yet may still be skipped.
   */
  protected stateOf(name: string): 'present' | 'absent' | 'unsure' {
    const cache = this.cache;
    if (cache === null || cache.unsure.has(name)) return 'unsure';
    const g = this.lastGroup.get(name);
    if (g !== undefined && g < this.groups && g >= this.resolved) return 'unsure';
    return cache.has(name) ? 'present' : 'absent';
  }

  protected touched(name: string): void {
    this.cache?.unsure.delete(name);
    this.lastGroup.set(name, this.groups);
  }

  protected injectClose(name: string): void {
    this.sink.toBackend(targetMessage(MessageType.Close, name));
    this.push({ k: 'injectedClose', name });
  }

  protected closeEvicted(names: readonly string[]): void {
    for (const name of names) {
      this.touched(name);
      this.injectClose(name);
    }
  }

  /** A message about a statement was skipped or failed: whether it exists is no longer known. */
  protected unsure(name: string): void {
    this.cache?.delete(name);
    this.cache?.unsure.add(name);
  }
}
