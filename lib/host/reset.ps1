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

# The strict mode of the worker's global scope (Set-StrictMode in a call) has no public getter or
# setter outside that scope, so it is read and written through the engine's own (internal) members
# (lib/host/cs/EngineMembers.cs). A build without them retires the process after every call.
function Get-GlobalScope {
    if ($null -eq $script:GlobalScope) {
        $internal = (Get-EngineMember 'SessionStateInternal').GetValue($script:WorkerSessionState)
        $scope = (Get-EngineMember 'GlobalScope').GetValue($internal)
        $script:StrictModeProperty = Get-EngineMember 'ScopeStrictMode'
        $script:GlobalScope = $scope
    }
    return $script:GlobalScope
}

# One of the members EngineMembers found at the start; throws when this process lacks it.
function Get-EngineMember([string]$Name) {
    $member = [Svc.Host.EngineMembers]::$Name
    if ($null -eq $member) { throw "The engine has no member '$Name'." }
    return $member
}

# ---------------------------------------------------------------------------------------------------
# The reset's fast path. Most calls change nothing a reset restores, so before asking for the reset
# script the slot loop compares a fingerprint of that state, read straight from the engine's tables
# (lib/host/cs/StateFingerprint.cs and FastReset.cs), with the one taken when the state was last
# clean. Any difference, or any table it cannot read, sends the reset down the full path; a build
# without those tables always takes the full path.
# ---------------------------------------------------------------------------------------------------

# Variable names both reset paths leave alone: per-pipeline automatics, constants, $Error (cleared
# on its own) and $PWD (follows the location).
$script:AutomaticVariables = [System.Collections.Generic.HashSet[string]]::new([string[]]@('$', '^', '?', '_',
        'PSItem', 'args', 'input', 'this', 'foreach', 'switch', 'MyInvocation', 'PSBoundParameters', 'PSCmdlet',
        'PSCommandPath', 'PSScriptRoot', 'Error', 'PWD', 'ExecutionContext', 'Host', 'null', 'true', 'false'),
    [System.StringComparer]::OrdinalIgnoreCase)

# Records the clean state for the reset's fast path (lib/host/cs/FastReset.cs), which the slot loop
# takes before asking for the full path here. When the engine's tables cannot be read, every reset
# takes the full path (said once).
function Save-CleanFingerprint {
    if ($script:FastResetBroken) { return }
    try {
        if ($null -eq $script:Loop.FastReset) {
            $fingerprint = [Svc.Host.StateFingerprint]::new($script:Worker, $script:WorkerSessionState, $script:AutomaticVariables)
            $script:Loop.FastReset = [Svc.Host.FastReset]::new($fingerprint, $script:WorkerSessionState, $script:ProcessState)
        } else {
            $script:Loop.FastReset.SaveClean()
        }
    } catch {
        $script:FastResetBroken = $true
        $script:Loop.FastReset = $null
        Write-Diag "every reset takes the full path: $((Get-InnerException $_.Exception).Message)"
    }
}

# The static fields of the PowerShell classes the worker knows (lib/host/cs/ClassStatics.cs), once
# their initializers have run on the worker's pipeline thread: read from here first, an initializer
# would wait for the worker runspace forever. An engine build that keeps classes elsewhere keeps
# working without it (said once).
function Get-ClassStatic {
    try {
        $types = [Svc.Host.ClassStatics]::TypesOf($script:Worker)
        if ($types.Length -gt 0) { $null = Invoke-WorkerScript $InitializeClassesScript @(, $types) }
        return [Svc.Host.ClassStatics]::new($script:Worker, $types)
    } catch {
        Write-Diag "resets will not restore the static fields of PowerShell classes: $((Get-InnerException $_.Exception).Message)"
        return $null
    }
}

# Records the process-wide and engine state resets return to (lib/host/cs/ProcessState.cs,
# EngineState.cs). Assemblies loaded later from the engine's, the runtime's or a startup module's
# directory are expected (lazy loading); any other retires the process. An engine build without the
# members EngineState reads keeps working without it (said once).
function Save-ProcessState([bool]$KeepNativeProcesses) {
    $separator = [System.IO.Path]::DirectorySeparatorChar
    $trusted = [System.Collections.Generic.List[string]]::new()
    $trusted.Add([System.IO.Path]::GetDirectoryName([psobject].Assembly.Location).TrimEnd($separator) + $separator)
    $trusted.Add([System.IO.Path]::GetDirectoryName([object].Assembly.Location).TrimEnd($separator) + $separator)
    foreach ($module in $script:Snapshot['Modules']) {
        if ($module.ModuleBase) { $trusted.Add($module.ModuleBase.TrimEnd($separator) + $separator) }
    }
    $script:ProcessState = [Svc.Host.ProcessState]::Take($trusted.ToArray(), (Get-ClassStatic))
    $script:Loop.ProcessState = $script:ProcessState
    $script:Loop.KeepChildren = $KeepNativeProcesses
    if (-not $KeepNativeProcesses) { [Svc.Host.EngineState]::AdoptOrphans() }
    try {
        $script:Loop.EngineState = [Svc.Host.EngineState]::new($script:Worker, $script:WorkerSessionState, $script:ProcessState)
    } catch {
        Write-Diag "resets will not restore command-lookup actions, event handlers, transcripts, language mode, completers or culture: $((Get-InnerException $_.Exception).Message)"
    }
}

# Records the items of the objects startup left in global variables and in the startup modules'
# script scopes, at any depth (lib/host/cs/StartupObjects.cs); both reset paths put them back first.
# State too large to compare at a bounded cost makes every reset retire the process (said here once).
function Save-StartupObject {
    $roots = [System.Collections.Specialized.OrderedDictionary]::new()
    foreach ($entry in $script:Snapshot['Variables'].GetEnumerator()) {
        if (-not $script:AutomaticVariables.Contains($entry.Key)) { $roots['$' + $entry.Key] = $entry.Value['Value'] }
    }
    if ($null -ne $script:Loop.EngineState) { $script:Loop.EngineState.AddModuleValuesTo($roots) }
    $objects = [Svc.Host.StartupObjects]::new($roots)
    if ($null -ne $objects.Overflow) { Write-Diag "every reset will retire the process: $($objects.Overflow)" }
    $script:Loop.StartupObjects = $objects
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

# The reset's full path: the slot loop found the state changed (or has no fast path).
function Invoke-Reset($Id) {
    $watch = [System.Diagnostics.Stopwatch]::StartNew()
    # Where the time goes, per step, for the profile in bench/ (ms, cumulative).
    $spans = [ordered]@{}
    try {
        if ($null -eq $script:Snapshot) { throw 'There is no snapshot to return to: startup has not run.' }
        $result = Invoke-WorkerScript $ResetScript @($script:Snapshot, $script:AutomaticVariables)
        $spans['script'] = $watch.Elapsed.TotalMilliseconds
        Restore-GlobalItem @($result['Restore'])
        $spans['functionsAndAliases'] = $watch.Elapsed.TotalMilliseconds
        Restore-GlobalStrictMode $script:StrictMode
        Save-CleanFingerprint
        $spans['fingerprint'] = $watch.Elapsed.TotalMilliseconds
        $script:ProcessState.Restore()
        $spans['environment'] = $watch.Elapsed.TotalMilliseconds
    } catch {
        Send-ExceptionFailure $Id 'reset' $_.Exception
        return
    }
    Send-Response $Id ([ordered]@{ durationMs = $watch.ElapsedMilliseconds; path = 'full'; spans = $spans; workingSetBytes = [System.Environment]::WorkingSet })
}
