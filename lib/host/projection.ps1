# svc worker, part of lib/host.ps1 (dot-sourced by it): the columns of a type's format view, for the
# projection of output objects (lib/host/cs/OutputProjection.cs), which asks once per type chain.

# The properties a script block reads from $_ (Process's "NPM(K)" column is [long]($_.NPM / 1024): NPM).
function Get-ScriptPropertyRead([string]$Script) {
    $tokens = $null
    $parseErrors = $null
    $ast = [System.Management.Automation.Language.Parser]::ParseInput($Script, [ref]$tokens, [ref]$parseErrors)
    $reads = $ast.FindAll({
            param($node)
            $node -is [System.Management.Automation.Language.MemberExpressionAst] -and
            $node.Member -is [System.Management.Automation.Language.StringConstantExpressionAst] -and
            $node.Expression -is [System.Management.Automation.Language.VariableExpressionAst] -and
            @('_', 'PSItem') -contains $node.Expression.VariablePath.UserPath
        }, $true)
    $names = [System.Collections.Generic.List[string]]::new()
    foreach ($read in $reads) {
        if (-not $names.Contains($read.Member.Value)) { $names.Add($read.Member.Value) }
    }
    return , $names.ToArray()
}

# One column as OutputProjection.cs reads it: its name (the label, else the property, else the
# script's text, as PowerShell's header), and its property or its script with the properties it reads.
function ConvertTo-ViewColumn([string]$Label, $Entry) {
    if ($null -eq $Entry) { return $null }
    $isProperty = $Entry.ValueType -eq [System.Management.Automation.DisplayEntryValueType]::Property
    $name = if (-not [string]::IsNullOrWhiteSpace($Label)) { $Label.Trim() } else { $Entry.Value.Trim() }
    if ($isProperty) { return @{ name = $name; property = $Entry.Value; script = $null; reads = [string[]]@() } }
    return @{ name = $name; property = $null; script = $Entry.Value; reads = (Get-ScriptPropertyRead $Entry.Value) }
}

# The row (table) or entry (list) for $TypeNames: the first selected by one of them, else the first
# selected by none.
function Select-ViewEntry($Entries, [string[]]$TypeNames, [scriptblock]$SelectedBy) {
    $fallback = $null
    foreach ($entry in $Entries) {
        $selected = @(& $SelectedBy $entry)
        if ($selected.Count -eq 0) {
            if ($null -eq $fallback) { $fallback = $entry }
            continue
        }
        foreach ($typeName in $TypeNames) { if ($selected -contains $typeName) { return $entry } }
    }
    return $fallback
}

# A table or list view as OutputProjection.cs reads it: columns (name, property or script, reads) and
# groupBy (the same, or null).
function ConvertTo-ViewShape($View, [string[]]$TypeNames) {
    $columns = [System.Collections.Generic.List[object]]::new()
    $control = $View.Control
    if ($control -is [System.Management.Automation.TableControl]) {
        $row = Select-ViewEntry $control.Rows $TypeNames { param($row) if ($null -ne $row.SelectedBy) { $row.SelectedBy.TypeNames } }
        if ($null -ne $row) {
            for ($i = 0; $i -lt $row.Columns.Count; $i++) {
                $label = if ($i -lt $control.Headers.Count) { $control.Headers[$i].Label } else { $null }
                $column = ConvertTo-ViewColumn $label $row.Columns[$i].DisplayEntry
                if ($null -ne $column) { $columns.Add($column) }
            }
        }
    } else {
        $entry = Select-ViewEntry $control.Entries $TypeNames { param($entry) if ($null -ne $entry.EntrySelectedBy) { $entry.EntrySelectedBy.TypeNames } else { $entry.SelectedBy } }
        if ($null -ne $entry) {
            foreach ($item in $entry.Items) {
                $column = ConvertTo-ViewColumn $item.Label $item.DisplayEntry
                if ($null -ne $column) { $columns.Add($column) }
            }
        }
    }
    if ($columns.Count -eq 0) { return $null }
    $groupBy = $null
    if ($null -ne $control.GroupBy -and $null -ne $control.GroupBy.Expression) {
        $groupBy = ConvertTo-ViewColumn $control.GroupBy.Label $control.GroupBy.Expression
        # Providers' items are grouped by their parent container, shown by a custom control that
        # Get-FormatData leaves out: for files PowerShell prints "Directory: <path>".
        if ([string]::IsNullOrWhiteSpace($control.GroupBy.Label) -and $groupBy['property'] -eq 'PSParentPath') {
            $groupBy['name'] = 'Directory'
            $groupBy['parentPath'] = $true
        }
    }
    return @{ columns = $columns.ToArray(); groupBy = $groupBy }
}

# The first table or list view, in type-chain order, that has columns; null when none.
function Select-FirstView([string[]]$TypeNames, $Definitions) {
    foreach ($typeName in $TypeNames) {
        foreach ($definition in $Definitions) {
            if ($definition.TypeNames -notcontains $typeName) { continue }
            foreach ($view in $definition.FormatViewDefinition) {
                if ($view.Control -isnot [System.Management.Automation.TableControl] -and $view.Control -isnot [System.Management.Automation.ListControl]) { continue }
                $shape = ConvertTo-ViewShape $view $TypeNames
                if ($null -ne $shape) { return $shape }
            }
        }
    }
    return $null
}

# The first table or list view of the first type in the chain that has one, read in the worker
# runspace, where the format data of imported modules lives; null when there is none.
function Get-FormatView([string[]]$TypeNames) {
    $shape = $null
    $lookup = @(foreach ($name in $TypeNames) { if ($name -ne 'System.Object') { [System.Management.Automation.WildcardPattern]::Escape($name) } })
    if ($lookup.Count -gt 0) {
        $ps = [powershell]::Create($script:Worker)
        try {
            $null = $ps.AddCommand('Microsoft.PowerShell.Utility\Get-FormatData').AddParameter('TypeName', [string[]]$lookup)
            $shape = Select-FirstView $TypeNames $ps.Invoke()
        } catch {
            Write-Diag "reading the format data of $($TypeNames[0]) failed: $((Get-InnerException $_.Exception).Message)"
        } finally {
            $ps.Dispose()
        }
    }
    return $shape
}
