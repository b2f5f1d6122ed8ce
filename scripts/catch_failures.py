#!/usr/bin/env python3
"""Reads the XML reports of a Catch2 run (one per rank under mpiexec) and prints what failed.

    catch_failures.py NAMES_OUT REPORT.xml [REPORT.xml ...]

Prints one line of counts, then each failed test case with its failed assertions (the file,
line, original and expanded expression, or the exception's message), and writes the failed
cases' names to NAMES_OUT, escaped as Catch2's --input-file reads them, so that a verbose
rerun (`BINARY -f NAMES_OUT -s`) runs those cases alone. A report that stops mid-case (the
binary crashed or was killed) names the case it stopped in; it counts as failed.

Exit status: 0 when every report is complete and nothing failed, 1 otherwise, 2 when no report
could be read at all. Regular expressions rather than an XML parser: a crashed binary leaves a
truncated file, and what it holds up to the crash is what matters.
"""
import html
import re
import sys

CASE = re.compile(r'<TestCase name="([^"]*)"[^>]*>(.*?)(?:</TestCase>|\Z)', re.S)
FAILED_EXPRESSION = re.compile(
    r'<Expression success="false" type="([^"]*)" filename="([^"]*)" line="(\d+)">\s*'
    r'<Original>\s*(.*?)\s*</Original>\s*<Expanded>\s*(.*?)\s*</Expanded>', re.S)
MESSAGE = re.compile(r'<(Exception|Failure|FatalErrorCondition) filename="([^"]*)" line="(\d+)">\s*(.*?)\s*</\1>', re.S)
CASES_TOTAL = re.compile(r'<OverallResultsCases successes="(\d+)" failures="(\d+)"')


def escape(name):
    """A test case name as Catch2's test-spec parser reads it literally."""
    return re.sub(r'([\\,\[\]"*~])', r'\\\1', name)


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    names_out, reports = argv[1], argv[2:]
    failed, passed, lines, complete, readable = [], 0, [], True, 0
    for path in reports:
        try:
            with open(path, encoding='utf-8', errors='replace') as f:
                text = f.read()
        except OSError as e:
            lines.append(f'{path}: no report ({e.strerror})')
            complete = False
            continue
        readable += 1
        if not CASES_TOTAL.search(text):
            complete = False
        for m in CASE.finditer(text):
            name, body = html.unescape(m.group(1)), m.group(2)
            ended = '<OverallResult ' in body
            if ended and '<OverallResult success="true"' in body:
                passed += 1
                continue
            if name not in failed:
                failed.append(name)
            lines.append(f'FAILED: {name}' + ('' if ended else f'  (the report stops inside this case: {path})'))
            for kind, file, line, original, expanded in FAILED_EXPRESSION.findall(body):
                lines.append(f'  {file}:{line}: {kind}( {html.unescape(original)} ) with {html.unescape(expanded)}')
            for kind, file, line, message in MESSAGE.findall(body):
                lines.append(f'  {file}:{line}: {kind}: {html.unescape(message)}')
    with open(names_out, 'w', encoding='utf-8') as f:
        f.writelines(escape(n) + '\n' for n in failed)
    if not readable:
        print('no Catch2 report could be read: ' + ', '.join(reports))
        return 2
    state = '' if complete else ' (a report is incomplete: the binary stopped before its end)'
    print(f'Catch2: {passed} test cases passed, {len(failed)} failed{state}')
    print('\n'.join(lines)) if lines else None
    return 0 if complete and not failed else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
