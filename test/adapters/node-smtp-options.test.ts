import { describe, expect, it } from 'vitest';
import { createNodeSmtp } from '../../src/adapters/node/smtp.js';

describe('createNodeSmtp options', () => {
  it('warns once for each production setting left to its default', () => {
    const warnings: string[] = [];
    createNodeSmtp({ onWarning: (message) => warnings.push(message) });
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/heloName/);
    expect(warnings[1]).toMatch(/mailFrom/);
  });

  it.each([
    ['heloName', { heloName: 'probe.example.net\r\nRCPT TO:<x@y>' }],
    ['heloName', { heloName: 'two words' }],
    ['mailFrom', { heloName: 'probe.example.net', mailFrom: 'a@b.c> SIZE=1' }],
  ])('refuses a %s that could break out of its command', (_name, options) => {
    expect(() => createNodeSmtp(options)).toThrow(TypeError);
  });
});
