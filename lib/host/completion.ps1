# svc worker, part of lib/host.ps1 (dot-sourced by slot.ps1): the completion script an `invoke` with
# `complete` runs in the worker runspace instead of its command (Invocation.cs). It asks PowerShell's
# own completion (CommandCompletion.CompleteInput: ValidateSet, enums, [ArgumentCompleter],
# Register-ArgumentCompleter, provider paths) for the values of one parameter of one command, and
# writes how many there are, then the values.
#
# Every value here comes from a client: none is ever code. The input line CompleteInput reads is
# built only from the command's and parameters' names (which svc took from the command's metadata,
# and which must be plain names here) and from values written as single-quoted strings, their quotes
# doubled, or as barewords of letters, digits and path characters only. CompleteInput parses that
# line; it never runs it.

$CompletionScript = {
    param([string]$Command, [string]$Parameter, [string]$Word, [hashtable]$Arguments)

    Set-StrictMode -Off
    $ErrorActionPreference = 'Stop'
    $plainName = '^[A-Za-z_][A-Za-z0-9_]*$'
    # A command name as a line may start with it: a verb-noun, module-qualified or not.
    if ($Command -notmatch '^[A-Za-z0-9_][A-Za-z0-9_.\-]*(\\[A-Za-z0-9_][A-Za-z0-9_.\-]*)?$' -or $Parameter -notmatch $plainName) {
        0
        return
    }
    # PowerShell reads all four of these as single quotes; each is doubled inside a quoted string.
    $quoted = { param([string]$Text) "'" + ($Text -replace "['\u2018\u2019\u201A\u201B]", '$0$0') + "'" }
    $line = [System.Text.StringBuilder]::new($Command)
    foreach ($name in @($Arguments.Keys)) {
        if ($name -notmatch $plainName -or $name -eq $Parameter) { continue }
        $null = $line.Append(' -').Append($name).Append(' ').Append((& $quoted ([string]$Arguments[$name])))
    }
    $null = $line.Append(' -').Append($Parameter).Append(' ')
    # A bareword reaches argument completers as typed (most compare it with -like "$word*"); any
    # other word is a quoted string, which they receive with its opening quote.
    if ($Word -match '^[A-Za-z0-9_][A-Za-z0-9_.\-/\\:]*$') { $null = $line.Append($Word) }
    elseif ($Word.Length -gt 0) { $null = $line.Append("'").Append(($Word -replace "['\u2018\u2019\u201A\u201B]", '$0$0')) }
    $text = $line.ToString()
    $found = [System.Management.Automation.CommandCompletion]::CompleteInput($text, $text.Length, $null)

    # Paths come only for a parameter that takes one: PowerShell offers the current folder's items
    # for any string parameter it knows nothing of, which would show a caller file names a prompt
    # never asked about.
    $takesPath = $Parameter -like '*Path'
    $info = @(Microsoft.PowerShell.Core\Get-Command -Name $Command -ErrorAction Ignore)[0]
    if ($null -ne $info -and $null -ne $info.Parameters -and $info.Parameters.ContainsKey($Parameter)) {
        $type = $info.Parameters[$Parameter].ParameterType
        if ($type.IsArray) { $type = $type.GetElementType() }
        $takesPath = $takesPath -or [System.IO.FileSystemInfo].IsAssignableFrom($type)
    }
    $values = [System.Collections.Generic.List[string]]::new()
    foreach ($match in $found.CompletionMatches) {
        $kind = [string]$match.ResultType
        if ($kind -ne 'ParameterValue' -and $kind -ne 'Text' -and -not ($takesPath -and $kind -like 'Provider*')) { continue }
        $value = [string]$match.CompletionText
        # A value completed inside quotes (or one with spaces) comes back quoted: the value is within.
        if ($value.Length -ge 2 -and $value[0] -eq "'" -and $value[$value.Length - 1] -eq "'") {
            $value = $value.Substring(1, $value.Length - 2) -replace "(['\u2018\u2019\u201A\u201B])\1", '$1'
        } elseif ($value.Length -ge 2 -and $value[0] -eq '"' -and $value[$value.Length - 1] -eq '"') {
            $value = $value.Substring(1, $value.Length - 2)
        }
        if ($value.Length -gt 0 -and -not $values.Contains($value)) { $values.Add($value) }
    }
    $values.Count
    foreach ($value in $values) { $value }
}
