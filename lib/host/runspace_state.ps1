# svc worker, part of lib/host.ps1 (dot-sourced by it): the snapshot and reset scripts that run inside the worker runspace.

# ---------------------------------------------------------------------------------------------------
# Scripts that run INSIDE the worker runspace. They are literals here only so the parser and ps-lint
# check them; Invoke-WorkerScript sends their text to the worker runspace and compiles it there once,
# because a script block stays bound to the runspace that created it. Each runs in its own local scope, so its variables never reach the user's global scope,
# and each switches strict mode off for itself so a user's global Set-StrictMode cannot break it.
# ---------------------------------------------------------------------------------------------------

$SnapshotScript = {
    param($GlobalAliases)

    Set-StrictMode -Off
    $ErrorActionPreference = 'Stop'
    $PSDefaultParameterValues = @{}
    $variables = @{}
    # The items of the objects these hold, at any depth, are kept by the host (StartupObjects.cs).
    foreach ($v in @(Microsoft.PowerShell.Utility\Get-Variable -Scope Global)) { $variables[$v.Name] = @{ Value = $v.Value; Options = $v.Options } }
    $functions = @{}
    foreach ($f in @(Microsoft.PowerShell.Management\Get-ChildItem -Path Function:)) { $functions[$f.Name] = @{ ScriptBlock = $f.ScriptBlock; Options = $f.Options } }
    $aliases = @{}
    foreach ($a in $GlobalAliases) { $aliases[$a.Name] = @{ Definition = $a.Definition; Options = $a.Options } }
    $drives = @{}
    foreach ($d in @(Microsoft.PowerShell.Management\Get-PSDrive)) { $drives[$d.Name] = @{ Root = $d.Root; Provider = $d.Provider.Name; Description = $d.Description } }
    # Get-Module runs last: the cmdlets above autoload Utility and Management, which must count as
    # part of the snapshot or every reset would unload them and every call would load them again.
    @{
        Variables       = $variables
        Functions       = $functions
        Aliases         = $aliases
        Drives          = $drives
        Location        = (Microsoft.PowerShell.Management\Get-Location).Path
        Jobs            = @(foreach ($job in @(Microsoft.PowerShell.Core\Get-Job)) { $job.InstanceId })
        Subscribers     = @(foreach ($subscriber in @(Microsoft.PowerShell.Utility\Get-EventSubscriber -Force)) { $subscriber.SubscriptionId })
        Breakpoints     = @(foreach ($breakpoint in @(Microsoft.PowerShell.Utility\Get-PSBreakpoint)) { $breakpoint.Id })
        Modules         = @(Microsoft.PowerShell.Core\Get-Module)
    }
}

# Runs the static initializers of PowerShell classes ($Types) here, on the worker's pipeline thread,
# where they can run (lib/host/cs/ClassStatics.cs). One that fails leaves its class unusable anyway.
$InitializeClassesScript = {
    param([type[]]$Types)

    Set-StrictMode -Off
    foreach ($type in $Types) {
        try { [System.Runtime.CompilerServices.RuntimeHelpers]::RunClassConstructor($type.TypeHandle) } catch { $null = $_ }
    }
    $true
}

$ResetScript = {
    # $Automatic: the engine-managed variable names to leave alone (the host's AutomaticVariables).
    param($Snapshot, $Automatic)

    Set-StrictMode -Off
    $ErrorActionPreference = 'Stop'
    # Local shadows, like the two lines above: a user's global WhatIf (Remove-* would only report), Confirm
    # (a prompt fails without a host UI) or default parameter values must not reach the cmdlets below.
    $WhatIfPreference = $false
    $ConfirmPreference = [System.Management.Automation.ConfirmImpact]::None
    $PSDefaultParameterValues = @{}

    # Every cmdlet is module-qualified: a call may have defined a function or alias of the same name.
    # Runspace-wide leftovers first: jobs, event subscriptions and breakpoints a call created, and
    # Set-PSDebug tracing (whose -Off also clears strict mode; the host restores that afterwards).
    foreach ($job in @(Microsoft.PowerShell.Core\Get-Job)) {
        if ($Snapshot.Jobs -notcontains $job.InstanceId) { Microsoft.PowerShell.Core\Remove-Job -Job $job -Force }
    }
    foreach ($subscriber in @(Microsoft.PowerShell.Utility\Get-EventSubscriber -Force)) {
        if ($Snapshot.Subscribers -notcontains $subscriber.SubscriptionId) { Microsoft.PowerShell.Utility\Unregister-Event -SubscriptionId $subscriber.SubscriptionId -Force }
    }
    foreach ($queued in @(Microsoft.PowerShell.Utility\Get-Event)) { Microsoft.PowerShell.Utility\Remove-Event -EventIdentifier $queued.EventIdentifier }
    foreach ($breakpoint in @(Microsoft.PowerShell.Utility\Get-PSBreakpoint)) {
        if ($Snapshot.Breakpoints -notcontains $breakpoint.Id) { Microsoft.PowerShell.Utility\Remove-PSBreakpoint -Breakpoint $breakpoint }
    }
    Microsoft.PowerShell.Core\Set-PSDebug -Off

    foreach ($module in @(Microsoft.PowerShell.Core\Get-Module)) {
        # Asked again each time: removing one module may already have taken another with it.
        if ($Snapshot.Modules -notcontains $module -and @(Microsoft.PowerShell.Core\Get-Module) -contains $module) { Microsoft.PowerShell.Core\Remove-Module -ModuleInfo $module -Force }
    }
    $loaded = @(Microsoft.PowerShell.Core\Get-Module)
    foreach ($module in $Snapshot.Modules) {
        if ($loaded -notcontains $module) { throw "Module '$($module.Name)' was removed and cannot be restored." }
    }

    # Removal searches the scope chain, so it reaches global functions from this scope; re-creating
    # one here would define it in this scope, so the host does that with top-level Set-Item calls.
    $functions = @{}
    foreach ($f in @(Microsoft.PowerShell.Management\Get-ChildItem -Path Function:)) { $functions[$f.Name] = $f }
    foreach ($name in @($functions.Keys)) {
        if (-not $Snapshot.Functions.ContainsKey($name)) { Microsoft.PowerShell.Management\Remove-Item -LiteralPath "Function:\$name" -Force }
    }
    $restore = [System.Collections.Generic.List[string]]::new()
    foreach ($entry in $Snapshot.Functions.GetEnumerator()) {
        $current = $functions[$entry.Key]
        if ($null -eq $current -or -not [object]::ReferenceEquals($current.ScriptBlock, $entry.Value.ScriptBlock)) { $restore.Add($entry.Key) }
    }

    $drives = @{}
    foreach ($d in @(Microsoft.PowerShell.Management\Get-PSDrive)) { $drives[$d.Name] = $d }
    foreach ($name in @($drives.Keys)) {
        $saved = $Snapshot.Drives[$name]
        $drive = $drives[$name]
        if ($null -eq $saved -or $saved.Root -cne $drive.Root -or $saved.Provider -cne $drive.Provider.Name) {
            Microsoft.PowerShell.Management\Remove-PSDrive -LiteralName $name -Scope Global -Force
            $drives.Remove($name)
        }
    }
    foreach ($entry in $Snapshot.Drives.GetEnumerator()) {
        if (-not $drives.ContainsKey($entry.Key)) {
            $null = Microsoft.PowerShell.Management\New-PSDrive -Name $entry.Key -PSProvider $entry.Value.Provider -Root $entry.Value.Root -Description $entry.Value.Description -Scope Global
        }
    }
    if ($ExecutionContext.SessionState.Path.CurrentLocation.Path -cne $Snapshot.Location) {
        Microsoft.PowerShell.Management\Set-Location -LiteralPath $Snapshot.Location
    }

    $same = {
        param($Left, $Right)
        # Value types are boxed anew and some engine strings are built on each read, so equal
        # values count as unchanged; anything else must be the very same object.
        if ([object]::ReferenceEquals($Left, $Right)) { return $true }
        if ($null -eq $Left -or $null -eq $Right) { return $false }
        if ($Left -is [string] -or $Left -is [System.ValueType]) { return $Left.Equals($Right) }
        return $false
    }
    $variables = @{}
    foreach ($v in @(Microsoft.PowerShell.Utility\Get-Variable -Scope Global)) { $variables[$v.Name] = $v }
    foreach ($name in @($variables.Keys)) {
        if (-not $Automatic.Contains($name) -and -not $Snapshot.Variables.ContainsKey($name)) {
            # -Name takes wildcards; a new Constant variable fails here and fails the reset.
            Microsoft.PowerShell.Utility\Remove-Variable -Name ([System.Management.Automation.WildcardPattern]::Escape($name)) -Scope Global -Force
        }
    }
    foreach ($entry in $Snapshot.Variables.GetEnumerator()) {
        $saved = $entry.Value
        if ($Automatic.Contains($entry.Key)) { continue }
        # A Constant cannot have changed; a ReadOnly one can, with -Force (Set-Variable HOME x -Force).
        if ($saved.Options.HasFlag([System.Management.Automation.ScopedItemOptions]::Constant)) { continue }
        $current = $variables[$entry.Key]
        if ($null -eq $current) {
            Microsoft.PowerShell.Utility\New-Variable -Name $entry.Key -Value $saved.Value -Option $saved.Options -Scope Global -Force
        } elseif ($current.Options -ne $saved.Options -or
            ($current.Options.HasFlag([System.Management.Automation.ScopedItemOptions]::ReadOnly) -and -not (& $same $current.Value $saved.Value))) {
            Microsoft.PowerShell.Utility\Set-Variable -Name ([System.Management.Automation.WildcardPattern]::Escape($entry.Key)) -Value $saved.Value -Option $saved.Options -Scope Global -Force
        } elseif (-not (& $same $current.Value $saved.Value)) {
            $current.Value = $saved.Value
        }
    }

    $global:Error.Clear()
    @{ Restore = $restore.ToArray() }
}
