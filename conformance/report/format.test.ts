import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatFailures, formatJson, formatJunit, formatTable, summarize, summaryLine } from './format.ts';
import type { RuleRow } from './row.ts';

const ROWS: RuleRow[] = [
  {
    ruleId: '4.3/master-x',
    section: '4.3',
    release: '0.6.0',
    title: 'gone',
    verdict: 'pass',
    evidence: 'GET /x -> 410',
  },
  {
    ruleId: '9.4/m',
    section: '9.4',
    release: '0.6.0',
    title: 'renamed <a> & "b"',
    verdict: 'fail',
    evidence: 'exports metrics_Old_* <here>',
  },
  {
    ruleId: '5/auth',
    section: '5',
    release: '0.2.0',
    title: 'auth',
    verdict: 'not-applicable',
    evidence: 'off',
  },
];

describe('the conformance report', () => {
  it('counts each verdict per release and says whether the release conforms', () => {
    assert.deepEqual(summarize(ROWS), [
      { release: '0.6.0', pass: 1, fail: 1, notApplicable: 0 },
      { release: '0.2.0', pass: 0, fail: 0, notApplicable: 1 },
    ]);
    assert.equal(
      summaryLine(summarize(ROWS)[0]!),
      'release 0.6.0: DOES NOT CONFORM: 1 pass, 1 fail, 0 not applicable',
    );
    assert.equal(
      summaryLine(summarize(ROWS)[1]!),
      'release 0.2.0: CONFORMS: 0 pass, 0 fail, 1 not applicable',
    );
  });

  it('prints one line per row with its verdict, section and evidence, failing evidence never cut', () => {
    const lines = formatTable(ROWS, { evidenceWidth: 5 }).split('\n');
    assert.equal(lines.length, 4);
    assert.match(lines[2]!, /^0\.6\.0 +FAIL +9\.4 +9\.4\/m +exports metrics_Old_\* <here>$/);
    assert.match(lines[1]!, /pass +4\.3 .* GET …$/);
    assert.match(lines[3]!, /n\/a +5 /);
  });

  it('repeats the failing rows whole after the summaries, and nothing when none fails', () => {
    assert.deepEqual(formatFailures(ROWS), [
      'failing rows (1):',
      '  0.6.0 9.4/m (renamed <a> & "b"): exports metrics_Old_* <here>',
    ]);
    assert.deepEqual(formatFailures(ROWS.filter((row) => row.verdict !== 'fail')), []);
  });

  it('writes JSON with the rows and summaries, and JUnit XML with failures and skips escaped', () => {
    const json = JSON.parse(formatJson(ROWS, 'matrix: test')) as { rows: RuleRow[]; matrix: string };
    assert.deepEqual(json.rows, ROWS);
    assert.equal(json.matrix, 'matrix: test');
    const xml = formatJunit(ROWS);
    assert.match(xml, /<testsuites name="svc-conformance" tests="3" failures="1" skipped="1">/);
    assert.match(xml, /<testsuite name="release 0\.6\.0" tests="2" failures="1" skipped="0">/);
    assert.match(
      xml,
      /<failure message="renamed &lt;a&gt; &amp; &quot;b&quot;">exports metrics_Old_\* &lt;here&gt;<\/failure>/,
    );
    assert.match(xml, /<skipped message="off"\/>/);
  });
});
