// The built-in secret shapes as a fixture corpus (issue 31, item 7): each row of the table finds
// its sample; ordinary prose, ids, hashes and base64 are left alone; near-misses of every row are
// scanned in linear time.

import { createHash, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createRedactor } from '../../index.js';
import { builtinSecretPatterns } from '../../src/redact-patterns.js';

const redactor = createRedactor();

describe('the built-in secret patterns', () => {
  it.each(builtinSecretPatterns.map((row) => [row.name, row] as const))(
    'redact the sample of %s',
    (_name, { sample, redacted }) => {
      expect(redactor.redact(sample)).toBe(redacted);
      // Found again inside other text, and in JSON text, where quotes and escapes surround it.
      expect(redactor.redact(`one ${sample} two`)).toBe(`one ${redacted} two`);
      const json = JSON.stringify({ field: sample });
      expect(redactor.redact(json)).toBe(JSON.stringify({ field: redacted }));
    },
  );

  it('cover the shapes secret scanners know', () => {
    const names = new Set(builtinSecretPatterns.map(({ name }) => name));
    for (const name of [
      'private_key',
      'jwt',
      'api_key',
      'aws_key',
      'aws_secret',
      'github_token',
      'gitlab_token',
      'slack_token',
      'slack_webhook',
      'stripe_key',
      'google_api_key',
      'npm_token',
      'huggingface_token',
      'bearer',
      'basic_auth',
      'url_password',
    ]) {
      expect(names, name).toContain(name);
    }
  });

  it('find passwords in postgres, redis and https URLs, and keep the rest of the URL', () => {
    for (const scheme of ['postgres', 'postgresql', 'redis', 'rediss', 'https', 'mongodb+srv', 'amqp']) {
      expect(redactor.redact(`${scheme}://app:hunter2-x@db.example.com:1234/x`)).toBe(
        `${scheme}://app:[REDACTED:url_password]@db.example.com:1234/x`,
      );
    }
    expect(redactor.redact('redis://:only-a-password@cache:6379')).toBe(
      'redis://:[REDACTED:url_password]@cache:6379',
    );
  });

  it('leave ordinary prose, ids, hashes and base64 of ordinary data alone', () => {
    const sha256 = createHash('sha256').update('report.csv').digest('hex');
    const sha1 = createHash('sha1').update('report.csv').digest('hex');
    const corpus = [
      'Basic authentication sends a user name and a password; Bearer tokens are better.',
      'The task-manager skipped sk-short, AKIA in prose, eyJ alone, Bearer, and a risky-skeleton-key.',
      'See https://example.com:8443/docs?page=2#top, mailto:ana@example.com and ana.maria@example.org.',
      'ssh git@github.com:acme/tools.git, then scp user@host:/tmp/x . and ftp://host:21/pub.',
      `commit ${sha1} (sha1), digest sha256:${sha256}, etag "${sha256.slice(0, 32)}"`,
      `request ${randomUUID()} for tenant ${randomUUID().toUpperCase()}`,
      Buffer.from('The quick brown fox jumps over the lazy dog, twice: the quick brown fox.').toString(
        'base64',
      ),
      Buffer.from(JSON.stringify({ user: 'ana', roles: ['admin', 'ops'], since: 2021 })).toString(
        'base64url',
      ),
      '{"AccessKeyId":"see-docs","SecretAccessKey":"<your secret here>","Token":"x"}',
      'snake_case_identifiers like api_org_name, hf_model_id, npm_package_name and gh_pages_branch.',
      'SKU-12345, SG.Group, GR1348941 alone, AIza alone, dop_v1_ alone, shpat_ alone, whsec_ alone.',
      'Dates 2024-01-01T10:00:00Z, ranges 1-2, flags --dry-run and --redis-url, C:\\Users\\ana.',
      '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUJ\n-----END CERTIFICATE-----',
    ];
    for (const text of corpus) expect(redactor.redact(text)).toBe(text);
  });

  it('scan near-misses of every row in linear time: 2 MB costs about twice 1 MB', () => {
    // Each row's sample cut just after its anchor, and each anchor repeated: nothing matches.
    const units = builtinSecretPatterns.flatMap(({ sample, anchor }) => {
      const at = sample.indexOf(anchor) + anchor.length;
      return [`${sample.slice(0, at + 3)} ; `, `${sample.slice(Math.max(0, at - 12), at).repeat(40)} ; `];
    });
    const unit = `${units.join('')}eyJ${'a'.repeat(2_000)} ; Basic ${'b'.repeat(2_000)} ; ://${'c:'.repeat(500)} ; `;
    expect(redactor.redact(unit)).toBe(unit);
    const oneMb = unit.repeat(Math.ceil(1_048_576 / unit.length));
    const twoMb = oneMb + oneMb;
    // The fastest of several interleaved rounds, in this process's CPU time: another process's
    // load preempts a long round more often than a short one, so wall time skews the ratio.
    const fastest = { one: Number.POSITIVE_INFINITY, two: Number.POSITIVE_INFINITY };
    for (let round = 0; round < 7; round++) {
      for (const [size, text] of [
        ['one', oneMb],
        ['two', twoMb],
      ] as const) {
        const started = process.cpuUsage();
        redactor.redact(text);
        const { user, system } = process.cpuUsage(started);
        fastest[size] = Math.min(fastest[size], (user + system) / 1_000);
      }
    }
    const ratio = fastest.two / fastest.one;
    // A pattern that backtracks over a run is quadratic: 4x for twice the text, and far more for
    // the runs of thousands of characters in this corpus.
    expect(ratio, `2 MB took ${fastest.two} ms, 1 MB ${fastest.one} ms`).toBeLessThanOrEqual(3);
  }, 30_000);
});
