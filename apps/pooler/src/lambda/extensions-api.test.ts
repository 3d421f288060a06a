import { describe, expect, it } from 'vitest';
import { parseEvent } from './extensions-api.js';

describe('parseEvent', () => {
  it('reads INVOKE and SHUTDOWN as the Extensions API sends them', () => {
    expect(parseEvent('{"eventType":"INVOKE","deadlineMs":1700000000000,"requestId":"r-1","invokedFunctionArn":"arn:aws:lambda:eu-west-1:1:function:f","tracing":{"type":"X-Amzn-Trace-Id","value":"Root=1"}}'))
      .toEqual({ eventType: 'INVOKE', deadlineMs: 1700000000000, requestId: 'r-1' });
    expect(parseEvent('{"eventType":"SHUTDOWN","shutdownReason":"spindown","deadlineMs":1700000002000}'))
      .toEqual({ eventType: 'SHUTDOWN', deadlineMs: 1700000002000, shutdownReason: 'spindown' });
  });

  it('refuses what is not an event', () => {
    expect(() => parseEvent('{"eventType":"RESTART","deadlineMs":1}')).toThrow(/unknown event type "RESTART"/);
    expect(() => parseEvent('{"eventType":"INVOKE"}')).toThrow(/without deadlineMs/);
    expect(() => parseEvent('not json')).toThrow(SyntaxError);
  });
});
