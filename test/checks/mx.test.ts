import { describe, expect, it } from 'vitest';
import { mailHosts } from '../../src/checks/mx.js';

describe('mailHosts', () => {
  it('names the MX records, or the domain itself for an implicit MX, else nothing', () => {
    const hosts = [{ exchange: 'mx1.example.com', priority: 10 }];
    expect(mailHosts({ kind: 'records', hosts })).toBe(hosts);
    expect(mailHosts({ kind: 'implicit', host: 'example.com' })).toEqual([
      { exchange: 'example.com', priority: 0 },
    ]);
    expect(mailHosts({ kind: 'null_mx' })).toEqual([]);
    expect(mailHosts({ kind: 'nxdomain' })).toEqual([]);
  });
});
