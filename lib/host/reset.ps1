# svc worker, part of lib/host.ps1 (dot-sourced by it): the host side of reset (protocol §4.5): its fast path, and what the
# worker scripts cannot restore from their own scope.

# Aliases as the global scope sees them. A top-level command runs in the global scope, where a
# Private alias is visible; the worker scripts run in a local scope, where it is not.
function Get-GlobalAlias {
    $ps = [powershell]::Create($script:Worker)
    try {
        $null = $ps.AddCommand('Microsoft.PowerShell.Management\Get-ChildItem').AddParameter('Path', 'Alias:')
        return , ([object[]]@(foreach ($alias in $ps.Invoke()) { $alias.PSObject.BaseObject }))
    } finally {
        $ps.Dispose()
    }
}

# A property of an engine object by name, internal ones included; throws when this build lacks it.
function Get-InternalProperty($Target, [string]$Name) {
    $property = $Target.GetType().GetProperty($Name, [System.Reflection.BindingFlags]'NonPublic, Public, Instance')
    if ($null -eq $property) { throw "The engine has no member '$Name' on $($Target.GetType().Name)." }
    return $property
}

# The strict mode of the worker's global scope (Set-StrictMode in a call) has no public getter or
# setter outside that scope, so it is read and written through the engine's own (internal) members.
# A build without them keeps working: strict mode is then not restored, and the log says so once.
function Get-GlobalScope {
    if ($null -eq $script:GlobalScope) {
        $state = $script:WorkerSessionState
        $internal = (Get-InternalProperty $state 'Internal').GetValue($state)
        $scope = (Get-InternalProperty $internal 'GlobalScope').GetValue($internal)
        $script:StrictModeProperty = Get-InternalProperty $scope 'StrictModeVersion'
        $script:GlobalScope = $scope
    }
    return $script:GlobalScope
}

# ---------------------------------------------------------------------------------------------------
# The reset's fast path. Most calls change nothing a reset restores, so before running the reset
# script the host compares a fingerprint of that state, read straight from the engine's tables (no
# cmdlets, no providers, about a millisecond), with the one taken when the state was last clean. Any
# difference, or any table it cannot read, sends the reset down the full path. The tables are
# internal members, read only while the worker is idle; a build without them always takes the full
# path.
# ---------------------------------------------------------------------------------------------------

# Variable names both reset paths leave alone: per-pipeline automatics, constants, $Error (cleared
# on its own) and $PWD (follows the location).
$script:AutomaticVariables = [System.Collections.Generic.HashSet[string]]::new([string[]]@('$', '^', '?', '_',
        'PSItem', 'args', 'input', 'this', 'foreach', 'switch', 'MyInvocation', 'PSBoundParameters', 'PSCmdlet',
        'PSCommandPath', 'PSScriptRoot', 'Error', 'PWD', 'ExecutionContext', 'Host', 'null', 'true', 'false'),
    [System.StringComparer]::OrdinalIgnoreCase)

# The engine's tables the fingerprint reads, found once (reflection on internal members).
function Get-EngineTables {
    if ($null -eq $script:EngineTables) {
        $scope = Get-GlobalScope
        $state = $script:WorkerSessionState
        $internal = (Get-InternalProperty $state 'Internal').GetValue($state)
        $context = (Get-InternalProperty $internal 'ExecutionContext').GetValue($internal)
        $script:EngineTables = @{
            Scope      = $scope
            Context    = $context
            Variables  = (Get-InternalProperty $scope 'Variables').GetValue($scope)
            Functions  = (Get-InternalProperty $scope 'FunctionTable').GetValue($scope)
            Aliases    = Get-InternalProperty $scope 'AliasTable'
            Drives     = Get-InternalProperty $scope 'Drives'
            Modules    = (Get-InternalProperty $internal 'ModuleTable').GetValue($internal)
            TraceLevel = Get-InternalProperty $context 'PSDebugTraceLevel'
            TraceStep  = Get-InternalProperty $context 'PSDebugTraceStep'
            Jobs       = (Get-InternalProperty $script:Worker 'JobRepository').GetValue($script:Worker)
        }
    }
    return $script:EngineTables
}

# What a reset restores, as plain values and object references; one pass over each table. Items
# of collections held by variables are kept one level deep, as the snapshot script keeps them.
function Get-StateFingerprint {
    $t = Get-EngineTables
    $variables = [System.Collections.Generic.List[object]]::new()
    foreach ($variable in $t.Variables.Values) {
        if ($script:AutomaticVariables.Contains($variable.Name)) { continue }
        $value = $variable.Value
        $variables.Add($variable)
        $variables.Add($value)
        $variables.Add($variable.Options)
        if ($value -is [System.Collections.IDictionary]) {
            $variables.Add($value.Count)
            foreach ($entry in $value.GetEnumerator()) { $variables.Add($entry.Key); $variables.Add($entry.Value) }
        } elseif ($value -is [System.Collections.IList]) {
            $variables.Add($value.Count)
            foreach ($item in $value) { $variables.Add($item) }
        } elseif ($null -ne $value -and $value.PSObject.BaseObject -is [System.Management.Automation.PSCustomObject]) {
            foreach ($property in $value.PSObject.Properties) { $variables.Add($property.Name); $variables.Add($property.Value) }
        }
    }
    foreach ($function in $t.Functions.Values) { $variables.Add($function); $variables.Add($function.ScriptBlock); $variables.Add($function.Options) }
    foreach ($alias in $t.Aliases.GetValue($t.Scope)) { $variables.Add($alias.Name); $variables.Add($alias.Definition); $variables.Add($alias.Options) }
    foreach ($drive in $t.Drives.GetValue($t.Scope)) { $variables.Add($drive) }
    foreach ($module in $t.Modules.Values) { $variables.Add($module) }
    $variables.Add($script:WorkerSessionState.Path.CurrentLocation.Path)
    $variables.Add($script:StrictModeProperty.GetValue($t.Scope))
    $variables.Add($t.TraceLevel.GetValue($t.Context))
    $variables.Add($t.TraceStep.GetValue($t.Context))
    $variables.Add($t.Jobs.Jobs.Count)
    $variables.Add(@($script:Worker.Events.Subscribers).Count)
    $variables.Add($script:Worker.Events.ReceivedEvents.Count)
    $variables.Add($script:Worker.Debugger.GetBreakpoints().Count)
    $variables.Add($PSStyle.OutputRendering)
    return , $variables
}

# True when nothing a reset restores differs from the clean fingerprint: the same objects, or equal
# strings and value types (which are boxed anew on each read).
function Test-StateUnchanged([System.Collections.Generic.List[object]]$Clean) {
    $now = Get-StateFingerprint
    if ($now.Count -ne $Clean.Count) { return $false }
    for ($i = 0; $i -lt $now.Count; $i++) {
        $left = $now[$i]
        $right = $Clean[$i]
        if ([object]::ReferenceEquals($left, $right)) { continue }
        if ($null -eq $left -or $null -eq $right) { return $false }
        if (($left -is [string] -or $left -is [System.ValueType]) -and $left.Equals($right)) { continue }
        return $false
    }
    return $true
}

# The fingerprint of the clean state, or null when the engine's tables cannot be read (every reset
# then takes the full path; said once).
function Save-CleanFingerprint {
    if ($script:FastResetBroken) { return }
    try {
        $script:CleanFingerprint = Get-StateFingerprint
    } catch {
        $script:FastResetBroken = $true
        $script:CleanFingerprint = $null
        Write-Diag "every reset takes the full path: $((Get-InnerException $_.Exception).Message)"
    }
}

function Get-GlobalStrictMode {
    try {
        $scope = Get-GlobalScope
        return @{ Known = $true; Version = $script:StrictModeProperty.GetValue($scope) }
    } catch {
        Write-Diag "cannot read the global strict mode, so resets will not restore it: $((Get-InnerException $_.Exception).Message)"
        return @{ Known = $false; Version = $null }
    }
}

function Restore-GlobalStrictMode($Saved) {
    if (-not $Saved['Known']) { return }
    $scope = Get-GlobalScope
    if ($script:StrictModeProperty.GetValue($scope) -ne $Saved['Version']) { $script:StrictModeProperty.SetValue($scope, $Saved['Version']) }
}

# Puts back the global functions the reset script names and the global aliases as the snapshot had
# them. These run as top-level commands, so they act in the global scope: a function defined from
# the reset script's scope would land in that scope, and a Private alias is invisible from it.
# Module-qualified names, so a call's look-alike function or alias cannot stand in for them.
function Restore-GlobalItem([string[]]$FunctionNames) {
    $ps = [powershell]::Create($script:Worker)
    try {
        $count = 0
        foreach ($name in $FunctionNames) {
            $saved = $script:Snapshot['Functions'][$name]
            $null = $ps.AddCommand('Microsoft.PowerShell.Management\Set-Item').AddParameter('LiteralPath', "Function:\$name").AddParameter('Value', $saved['ScriptBlock']).AddParameter('Options', $saved['Options']).AddParameter('Force').AddParameter('ErrorAction', 'Stop')
            $null = $ps.AddStatement()
            $count++
        }
        $saved = $script:Snapshot['Aliases']
        $current = @{}
        foreach ($alias in (Get-GlobalAlias)) { $current[$alias.Name] = $alias }
        foreach ($name in @($current.Keys)) {
            if (-not $saved.ContainsKey($name)) {
                $null = $ps.AddCommand('Microsoft.PowerShell.Utility\Remove-Alias').AddParameter('Name', $name).AddParameter('Scope', 'Global').AddParameter('Force').AddParameter('ErrorAction', 'Stop')
                $null = $ps.AddStatement()
                $count++
            }
        }
        foreach ($entry in $saved.GetEnumerator()) {
            $alias = $current[$entry.Key]
            if ($null -eq $alias -or $alias.Definition -cne $entry.Value['Definition'] -or $alias.Options -ne $entry.Value['Options']) {
                $null = $ps.AddCommand('Microsoft.PowerShell.Utility\Set-Alias').AddParameter('Name', $entry.Key).AddParameter('Value', $entry.Value['Definition']).AddParameter('Option', $entry.Value['Options']).AddParameter('Scope', 'Global').AddParameter('Force').AddParameter('ErrorAction', 'Stop')
                $null = $ps.AddStatement()
                $count++
            }
        }
        if ($count -eq 0) { return }
        $null = $ps.Invoke()
        # AddStatement makes this a batch, and a batch rethrows only -ErrorAction Stop failures: any
        # other terminating error of a statement (binding, provider) is added to the error stream
        # and the batch goes on (PowerShell.CoreInvoke), so a failed restore shows only there.
        if ($ps.Streams.Error.Count -gt 0) { throw $ps.Streams.Error[0] }
    } finally {
        $ps.Dispose()
    }
}

function Get-EnvSnapshot {
    $comparer = if ($IsWindows) { [System.StringComparer]::OrdinalIgnoreCase } else { [System.StringComparer]::Ordinal }
    $table = [System.Collections.Generic.Dictionary[string, string]]::new($comparer)
    foreach ($entry in [System.Environment]::GetEnvironmentVariables().GetEnumerator()) {
        # Windows keeps per-drive directories as '=C:' entries, which cannot be set by name.
        if (-not ([string]$entry.Key).StartsWith('=')) { $table[[string]$entry.Key] = [string]$entry.Value }
    }
    return , $table
}

function Restore-Environment {
    $saved = $script:EnvSnapshot
    $now = Get-EnvSnapshot
    foreach ($name in @($now.Keys)) {
        # [NullString]::Value, not $null: PowerShell passes $null to a string parameter as "", which
        # leaves the variable set (to an empty value) instead of removing it.
        if (-not $saved.ContainsKey($name)) { [System.Environment]::SetEnvironmentVariable($name, [NullString]::Value) }
    }
    foreach ($name in @($saved.Keys)) {
        if (-not $now.ContainsKey($name) -or $now[$name] -cne $saved[$name]) {
            [System.Environment]::SetEnvironmentVariable($name, $saved[$name])
        }
    }
}

function Invoke-Reset($Id) {
    $watch = [System.Diagnostics.Stopwatch]::StartNew()
    # Where the time goes, per step, for the profile in bench/ (ms, cumulative).
    $spans = [ordered]@{}
    $path = 'full'
    try {
        if ($null -eq $script:Snapshot) { throw 'There is no snapshot to return to: startup has not run.' }
        $unchanged = $false
        if ($null -ne $script:CleanFingerprint) {
            try { $unchanged = Test-StateUnchanged $script:CleanFingerprint } catch { $unchanged = $false }
        }
        $spans['check'] = $watch.Elapsed.TotalMilliseconds
        if ($unchanged) {
            $path = 'fast'
            $errors = $script:WorkerSessionState.PSVariable.GetValue('Error')
            if ($errors -is [System.Collections.IList] -and $errors.Count -gt 0) { $errors.Clear() }
        } else {
            $result = Invoke-WorkerScript $ResetScript @($script:Snapshot, $script:AutomaticVariables)
            $spans['script'] = $watch.Elapsed.TotalMilliseconds
            Restore-GlobalItem @($result['Restore'])
            $spans['functionsAndAliases'] = $watch.Elapsed.TotalMilliseconds
            Restore-GlobalStrictMode $script:StrictMode
            Save-CleanFingerprint
            $spans['fingerprint'] = $watch.Elapsed.TotalMilliseconds
        }
        Restore-Environment
        $spans['environment'] = $watch.Elapsed.TotalMilliseconds
    } catch {
        $record = Get-ErrorRecord (Get-InnerException $_.Exception)
        Send-Failure $Id 'reset' $record.ToString() (ConvertTo-ErrorInfo $record $true)
        return
    }
    Send-Response $Id ([ordered]@{ durationMs = $watch.ElapsedMilliseconds; path = $path; spans = $spans })
}
