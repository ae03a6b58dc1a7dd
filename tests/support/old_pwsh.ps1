# Run by tests/support/old-pwsh with svc's whole pwsh command line in $args: reports PowerShell 7.2.0
# (or $env:REPORTED_PWSH_VERSION), then runs the script after -File with the named arguments that
# follow it.
$reported = if ($env:REPORTED_PWSH_VERSION) { $env:REPORTED_PWSH_VERSION } else { '7.2.0' }
$PSVersionTable['PSVersion'] = [System.Management.Automation.SemanticVersion]$reported
$at = [array]::IndexOf($args, '-File')
$named = @{}
for ($i = $at + 2; $i -lt $args.Count; $i++) {
    $name = $args[$i].TrimStart('-')
    if ($i + 1 -lt $args.Count -and -not $args[$i + 1].StartsWith('-')) { $named[$name] = $args[++$i] } else { $named[$name] = $true }
}
& $args[$at + 1] @named
exit $LASTEXITCODE
