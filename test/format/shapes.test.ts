import { describe, expect, it } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import {
  COMPACT_FIELDS,
  DETAILED_FIELDS,
  SHAPE_B_FIELDS,
  SHAPE_B_OPTIONAL,
  parseFields,
  selectFields,
  toCompact,
  toDetailed,
  toShapeB,
  UnknownFieldError,
} from '../../src/format/shapes.js';

const engine = createEngine({
  dns: createMemoryDns({ 'gmail.com': ['gmail-smtp-in.l.google.com'] }),
});

describe('result shapes', () => {
  it('shape A compact has exactly email, state, score, reason', async () => {
    const verdict = await engine.verify('ann@gmail.com');
    expect(Object.keys(toCompact(verdict))).toEqual(['email', 'state', 'score', 'reason']);
    // The list the OpenAPI document states the shape by.
    expect(Object.keys(toCompact(verdict))).toEqual(COMPACT_FIELDS);
  });

  it('shape A detailed adds the documented fields in snake_case', async () => {
    const detailed = toDetailed(await engine.verify('Sales@gmail.com'));
    expect(Object.keys(detailed)).toEqual(DETAILED_FIELDS);
    expect(detailed).toMatchObject({
      // RFC 2142 2: role mailbox names are case-insensitive; the parser writes them lowercase.
      email: 'sales@gmail.com',
      user: 'sales',
      domain: 'gmail.com',
      mx_record: 'gmail-smtp-in.l.google.com',
      smtp_provider: 'google',
      role: true,
      free: true,
      disposable: false,
      catch_all: null,
      mailbox_full: null,
      no_reply: false,
    });
  });

  it('fields selects top-level fields and always includes email', async () => {
    const verdict = await engine.verify('ann@gmail.com');
    expect(selectFields(verdict, parseFields('score, free'))).toEqual({
      email: 'ann@gmail.com',
      score: verdict.score,
      free: true,
    });
  });

  it('an unknown field is a typed error naming the allowed ones', () => {
    expect(() => parseFields('score,colour')).toThrow(UnknownFieldError);
    try {
      parseFields(['colour']);
    } catch (error) {
      expect(error).toMatchObject({
        code: 'invalid_request',
        field: 'colour',
        allowed: DETAILED_FIELDS,
      });
      expect((error as Error).message).toContain('mx_record');
    }
  });

  it('shape B: status invalid only when undeliverable; site_source only when given', async () => {
    const bad = toShapeB(await engine.verify('a..b@gmail.com'));
    expect(bad).toMatchObject({ status: 'invalid', deliverability: 'undeliverable', score: 0 });
    expect('site_source' in bad).toBe(false);
    const good = toShapeB(await engine.verify('ann@gmail.com'), 'signup');
    expect(good).toMatchObject({
      status: 'valid',
      deliverability: 'deliverable',
      risk_factors: ['free'],
      site_source: 'signup',
    });
  });

  it('shape B has the fields the OpenAPI document states it by, in order', async () => {
    const verdict = await engine.verify('ann@gmail.com');
    expect(Object.keys(toShapeB(verdict, 'signup'))).toEqual(SHAPE_B_FIELDS);
    expect(Object.keys(toShapeB(verdict))).toEqual(
      SHAPE_B_FIELDS.filter((field) => !SHAPE_B_OPTIONAL.includes(field)),
    );
  });
});
