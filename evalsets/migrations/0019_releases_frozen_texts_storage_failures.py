from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("evalsets", "0018_background_release_interruptions"),
    ]

    operations = [
        migrations.AddField(
            model_name="release",
            name="texts",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="release",
            name="storage_failures",
            field=models.PositiveIntegerField(default=0),
        ),
    ]
